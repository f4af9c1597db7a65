//! The `bridgectl` command line. Parsing of arguments and exit codes live here; all logic is in the
//! library so tests can call it in-process.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use bridgectl::check::{CheckOptions, check};
use bridgectl::render::{self, Format};
use bridgectl::schema::{ConfigKind, schema_text};
use clap::{Parser, Subcommand, ValueEnum};

/// Check Traefik-compatible configuration before it reaches production.
///
/// bridgectl reads the same YAML Traefik reads (a static traefik.yml plus file-provider dynamic
/// files), reports every problem with file:line:column, and exits non-zero when the configuration
/// would not work as written.
#[derive(Debug, Parser)]
#[command(name = "bridgectl", version, propagate_version = true)]
#[command(
    after_help = "Exit codes: 0 ok (warnings allowed), 1 configuration errors, 2 usage or I/O problem."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check a configuration directory and report every problem at once.
    ///
    /// DIR plays the role of /etc/traefik: it must hold traefik.yml (or traefik.yaml), and
    /// `providers.file.filename: /etc/traefik/dynamic.yml` is read from DIR/dynamic.yml.
    #[command(
        after_help = "Examples:\n  bridgectl check examples/scadabridge\n  bridgectl check . --format github --deny-warnings\n  bridgectl check --static traefik.yml --dynamic conf.d/ --var backend=10.0.0.5\n\nExit codes: 0 ok (warnings allowed), 1 configuration errors, 2 usage or I/O problem."
    )]
    Check(CheckArgs),
    /// Check, apply a profile and write the frozen routing plan (refuses to write on any error).
    ///
    /// The plan is canonical JSON with a `sha256:` content hash: the same inputs always give the same
    /// bytes. It is written atomically (temporary file + rename), so a reader never sees half a plan.
    #[command(
        after_help = "Examples:\n  bridgectl build examples/scadabridge --profile dev --out plan.json\n  bridgectl build examples/scadabridge --profile prod --out plan.json \\\n      --var domain=scadabridge.example.com --var tls_cert=/etc/traefik/certs/bridge.crt \\\n      --var tls_key=/etc/traefik/certs/bridge.key --var dashboard_users_file=/etc/traefik/dashboard.htpasswd\n  bridgectl build examples/scadabridge --profile prod --out plan.json \\\n      --var domain=scadabridge.example.com --var cert_resolver=le \\\n      --var dashboard_users_file=/etc/traefik/dashboard.htpasswd   # ACME instead of certificate files\n\nExit codes: 0 plan written, 1 configuration or policy errors (nothing written), 2 usage or I/O problem."
    )]
    Build(BuildArgs),
    /// Check, build and serve in one process, for development (what `build` + `bridge-runtime` do).
    #[command(
        after_help = "Example:\n  bridgectl run examples/scadabridge --profile dev --bind web=127.0.0.1:9000 --bind traefik=127.0.0.1:8180 \\\n      --resolve scadabridge-central-a=127.0.0.2 --resolve scadabridge-central-b=127.0.0.3"
    )]
    Run(RunArgs),
    /// Show what a plan serves: entry points, routers per entry point, services, middlewares, TLS.
    Explain {
        /// The plan file (its hash and version are verified first).
        plan: PathBuf,
    },
    /// Show what changed in routing, services, TLS and policy between two plans (exit 1 if any).
    Diff {
        /// The old plan.
        old: PathBuf,
        /// The new plan.
        new: PathBuf,
    },
    /// Print the generated JSON Schema of the static or dynamic configuration.
    ///
    /// Point your editor at it with a first line such as
    /// `# yaml-language-server: $schema=../schemas/traefik-dynamic.schema.json`.
    Schema {
        /// Which schema.
        #[arg(value_enum)]
        kind: SchemaKind,
    },
    /// Write the keepalived configuration of one appliance of a pair sharing a virtual address.
    ///
    /// Both appliances serve the same plan; keepalived (VRRP over unicast) gives the address to one
    /// of them and moves it when that one's bridge-runtime stops answering /ping: SIGTERM (planned,
    /// no request lost while `requestAcceptGraceTimeout` covers the switch), a crash (~2 s), the
    /// host (about 3 adverts). Backend failovers behind the pair never move it. See
    /// packaging/ha/README.md for the whole setup.
    #[command(
        after_help = "Example (the first appliance; the second swaps --self/--peer and takes --priority 100):\n  bridgectl keepalived --name bridge-a --interface eth0 --vip 10.0.0.100/24 \\\n      --self 10.0.0.1 --peer 10.0.0.2 --priority 150 --out /etc/keepalived/keepalived.conf\n\nExit codes: 0 written, 2 an input keepalived would reject or misread."
    )]
    Keepalived(KeepalivedArgs),
}

#[derive(Debug, clap::Args)]
struct KeepalivedArgs {
    /// A name for keepalived's logs (router_id).
    #[arg(long, default_value = "bridge")]
    name: String,
    /// The interface carrying the virtual address and the VRRP adverts.
    #[arg(long)]
    interface: String,
    /// The virtual address with its prefix length, as clients reach the pair.
    #[arg(long, value_name = "ADDR/PREFIX")]
    vip: String,
    /// This appliance's own address on the interface.
    #[arg(long = "self", value_name = "ADDR")]
    self_addr: String,
    /// The other appliance's address (adverts are unicast to it).
    #[arg(long, value_name = "ADDR")]
    peer: String,
    /// 1..=254; the higher takes the address first. Use different values on the two appliances.
    #[arg(long)]
    priority: u16,
    /// VRRP virtual_router_id: the same on both appliances, unique on the segment.
    #[arg(long, default_value_t = 51)]
    router_id: u16,
    /// Seconds between VRRP adverts.
    #[arg(long, value_name = "SECONDS", default_value_t = 1)]
    advert: u16,
    /// This appliance's ping endpoint (the `ping:` section's entry point).
    #[arg(long, default_value = "http://127.0.0.1:8080/ping")]
    ping_url: String,
    /// The bridge-runtime binary that runs the check.
    #[arg(long, value_name = "PATH", default_value = "/usr/bin/bridge-runtime")]
    runtime: String,
    /// Called on every transition with `INSTANCE bridge MASTER|BACKUP|FAULT|STOP PRIORITY`.
    #[arg(
        long,
        value_name = "COMMAND",
        default_value = "/usr/bin/logger -t bridge-ha"
    )]
    notify: String,
    /// The user keepalived runs the check and the notify hook as.
    #[arg(long, default_value = "root")]
    script_user: String,
    /// Write here (atomically) instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct CheckArgs {
    /// Configuration directory (Traefik's /etc/traefik).
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// Static configuration file; default DIR/traefik.yml or DIR/traefik.yaml.
    #[arg(long = "static", value_name = "FILE")]
    static_file: Option<PathBuf>,
    /// Dynamic configuration file or directory; default from providers.file in the static file.
    #[arg(long, value_name = "PATH")]
    dynamic: Option<PathBuf>,
    /// Template variable for dynamic files and profiles, `{{ KEY }}` becomes VALUE (repeatable).
    #[arg(long = "var", value_name = "KEY=VALUE", value_parser = parse_var)]
    vars: Vec<(String, String)>,
    /// Apply a deployment profile and its policy: `dev`, `prod`, or a profile file.
    #[arg(long, value_name = "dev|prod|PATH")]
    profile: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// Fail (exit 1) on warnings too.
    #[arg(long)]
    deny_warnings: bool,
    /// Also print notes (style findings such as key case).
    #[arg(long, short)]
    verbose: bool,
    /// Colour: auto (only on a terminal), always, never.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    color: Color,
}

#[derive(Debug, clap::Args)]
struct BuildArgs {
    #[command(flatten)]
    check: CheckArgs,
    /// Where to write the plan (`-` for standard output).
    #[arg(long, short, value_name = "PLAN")]
    out: PathBuf,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    #[command(flatten)]
    check: CheckArgs,
    #[command(flatten)]
    serve: bridge_runtime::app::ServeArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum SchemaKind {
    /// traefik.yml
    Static,
    /// file-provider files
    Dynamic,
    /// the routing plan written by `build`
    Plan,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

fn run_serve(args: RunArgs) -> anyhow::Result<ExitCode> {
    let mut cargs = args.check;
    let profile = cargs
        .profile
        .get_or_insert_with(|| "dev".to_owned())
        .clone();
    let opts = CheckOptions {
        dir: cargs.dir.clone(),
        static_file: cargs.static_file.clone(),
        dynamic: cargs.dynamic.clone(),
        vars: cargs.vars.iter().cloned().collect::<BTreeMap<_, _>>(),
        profile: Some(bridgectl::profile::ProfileSelector::parse(&profile)),
        now_unix: None,
    };
    let report = check(&opts).context("check failed")?;
    let prefix = dir_prefix(&cargs.dir);
    let shown: Vec<_> = report
        .diagnostics
        .iter()
        .filter(|d| cargs.verbose || d.severity != bridgectl::diag::Severity::Note)
        .cloned()
        .collect();
    std::io::stderr()
        .write_all(render::human(&report.sources, &shown, &prefix, false).as_bytes())?;
    if !report.ok() {
        eprintln!(
            "{}",
            render::summary(&report.diagnostics, report.file_count())
        );
        return Ok(ExitCode::from(1));
    }
    let plan = match bridgectl::resolve::build_plan(&report, &profile) {
        Ok(p) => p,
        Err(diags) => {
            std::io::stderr()
                .write_all(render::human(&report.sources, &diags, &prefix, false).as_bytes())?;
            return Ok(ExitCode::from(1));
        }
    };
    eprintln!("bridgectl: serving plan {} (profile {profile})", plan.hash);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(bridge_runtime::app::serve(plan, args.serve.options(None)))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(ExitCode::SUCCESS)
}

fn load_plan(path: &std::path::Path) -> anyhow::Result<bridge_plan::Plan> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    bridge_plan::load_verified(&bytes)
        .with_context(|| format!("{} is not a valid plan", path.display()))
}

fn parse_var(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not KEY=VALUE"))?;
    if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("variable name `{k}` must be letters, digits and _"));
    }
    Ok((k.to_owned(), v.to_owned()))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("bridgectl: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Schema { kind } => {
            let text = match kind {
                SchemaKind::Static => schema_text(ConfigKind::Static),
                SchemaKind::Dynamic => schema_text(ConfigKind::Dynamic),
                SchemaKind::Plan => bridge_plan::schema::plan_schema_text(),
            };
            std::io::stdout().write_all(text.as_bytes())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Check(args) => run_check(args, None),
        Command::Build(args) => {
            let out = args.out.clone();
            run_check(args.check, Some(out))
        }
        Command::Run(args) => run_serve(args),
        Command::Keepalived(a) => {
            let pair = bridgectl::ha::Pair {
                name: a.name,
                interface: a.interface,
                vip: a.vip,
                self_addr: a.self_addr,
                peer: a.peer,
                priority: a.priority,
                router_id: a.router_id,
                advert: a.advert,
                ping_url: a.ping_url,
                runtime: a.runtime,
                notify: a.notify,
                script_user: a.script_user,
            };
            let text = match bridgectl::ha::render(&pair) {
                Ok(text) => text,
                Err(e) => {
                    eprintln!("bridgectl keepalived: error: {e}");
                    return Ok(ExitCode::from(2));
                }
            };
            match a.out {
                Some(path) => bridgectl::emit::write_atomic(&path, text.as_bytes())
                    .with_context(|| format!("cannot write {}", path.display()))?,
                None => std::io::stdout().write_all(text.as_bytes())?,
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Explain { plan } => {
            let plan = load_plan(&plan)?;
            std::io::stdout().write_all(bridgectl::explain::explain(&plan).as_bytes())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Diff { old, new } => {
            let (a, b) = (load_plan(&old)?, load_plan(&new)?);
            let d = bridgectl::explain::diff(&a, &b);
            std::io::stdout().write_all(d.render().as_bytes())?;
            Ok(if d.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}

fn run_check(args: CheckArgs, plan_out: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let opts = CheckOptions {
        dir: args.dir.clone(),
        static_file: args.static_file.clone(),
        dynamic: args.dynamic.clone(),
        vars: args.vars.iter().cloned().collect::<BTreeMap<_, _>>(),
        profile: args
            .profile
            .as_deref()
            .map(bridgectl::profile::ProfileSelector::parse),
        now_unix: None,
    };
    let report = check(&opts).context("check failed")?;
    let shown: Vec<_> = report
        .diagnostics
        .iter()
        .filter(|d| {
            args.verbose
                || d.severity != bridgectl::diag::Severity::Note
                || args.format != Format::Human
        })
        .cloned()
        .collect();
    let errors = report
        .diagnostics
        .iter()
        .filter(|d| d.severity == bridgectl::diag::Severity::Error)
        .count();
    let warnings = report
        .diagnostics
        .iter()
        .filter(|d| d.severity == bridgectl::diag::Severity::Warning)
        .count();
    let failed = errors > 0 || (args.deny_warnings && warnings > 0);
    let prefix = dir_prefix(&args.dir);
    let mut out = std::io::stdout().lock();
    match args.format {
        Format::Human => {
            let color = match args.color {
                Color::Always => true,
                Color::Never => false,
                Color::Auto => {
                    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
                }
            };
            let mut err = std::io::stderr().lock();
            err.write_all(render::human(&report.sources, &shown, &prefix, color).as_bytes())?;
            writeln!(
                err,
                "{}",
                render::summary(&report.diagnostics, report.file_count())
            )?;
        }
        Format::Json => {
            serde_json::to_writer_pretty(
                &mut out,
                &render::json(&report.sources, &shown, !failed),
            )?;
            writeln!(out)?;
        }
        Format::Github => {
            out.write_all(render::github(&report.sources, &shown, &prefix).as_bytes())?
        }
        Format::Sarif => {
            serde_json::to_writer_pretty(
                &mut out,
                &render::sarif(&report.sources, &shown, &prefix),
            )?;
            writeln!(out)?;
        }
    }
    if let Some(out_path) = plan_out.clone().filter(|_| !failed) {
        let profile = report
            .loaded
            .profile
            .as_ref()
            .map_or_else(|| "none".to_owned(), |p| p.name.clone());
        match bridgectl::resolve::build_plan(&report, &profile) {
            Err(diags) => {
                let mut err = std::io::stderr().lock();
                err.write_all(render::human(&report.sources, &diags, &prefix, false).as_bytes())?;
                writeln!(
                    err,
                    "build failed: the configuration cannot become a plan; nothing written"
                )?;
                std::mem::forget(report);
                return Ok(ExitCode::from(1));
            }
            Ok(plan) => {
                // `build_plan` sealed it; serialise once more only for the file layout.
                let value = serde_json::to_value(&plan).context("serialising the plan")?;
                let text = bridge_plan::canonical_pretty(&value).context("serialising the plan")?;
                if out_path.as_os_str() == "-" {
                    std::io::stdout().write_all(text.as_bytes())?;
                } else {
                    bridgectl::emit::write_atomic(&out_path, text.as_bytes())
                        .with_context(|| format!("writing {}", out_path.display()))?;
                    writeln!(out, "{}", plan.hash)?;
                }
                let summary = format!(
                    "wrote {} ({} entry points, {} routers, {} services; profile {profile})",
                    out_path.display(),
                    plan.entrypoints.len(),
                    plan.routers.len(),
                    plan.services.len()
                );
                eprintln!("{summary}");
                std::mem::forget((plan, value, text));
            }
        }
    } else if plan_out.is_some() {
        eprintln!("build failed: fix the errors above; nothing written");
    }
    // The report can hold hundreds of thousands of small allocations; the process is about to exit
    // and the OS reclaims memory wholesale, so skip the destructor walk (measurably faster on 10k
    // routers).
    std::mem::forget(report);
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The directory as typed, with a trailing slash, for paths in annotations ("" for ".").
fn dir_prefix(dir: &std::path::Path) -> String {
    let s = dir.to_string_lossy();
    if s.is_empty() || s == "." || s == "./" {
        String::new()
    } else if s.ends_with('/') {
        s.into_owned()
    } else {
        format!("{s}/")
    }
}
