//! `bridge-runtime PLAN`: serve a sealed bridgectl plan; `bridge-runtime healthcheck`: probe one.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Serve a routing plan written by `bridgectl build`.
///
/// The plan's hash and version are verified before anything is served. Servers with a health check
/// are probed before they get traffic. Under systemd, READY=1 is sent once every listener is bound
/// and the first probe round is done; sockets passed by socket activation are used for the entry
/// points they are named after (`FileDescriptorName=`).
#[derive(Debug, Parser)]
#[command(
    name = "bridge-runtime",
    version,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    subcommand_value_name = "COMMAND",
    subcommand_help_heading = "Commands (instead of serving)"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: Args,
}

#[derive(Debug, clap::Args)]
struct Args {
    /// The plan file.
    #[arg(required = true)]
    plan: Option<PathBuf>,
    #[command(flatten)]
    serve: bridge_runtime::app::ServeArgs,
    /// Worker threads serving connections. Default: TOKIO_WORKER_THREADS when set, else the CPUs
    /// this process may run on (its affinity: under `taskset -c 0` that is one). With one, all
    /// work runs on a single thread without work stealing, the fastest way to use one core.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    workers: Option<u16>,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Verify a plan file (format version, hash, internal references) without serving it.
    ///
    /// Exits 0 and prints the plan's hash when this bridge-runtime would load it, 2 otherwise.
    Verify {
        /// The plan file.
        plan: PathBuf,
    },
    /// Probe a running bridge-runtime (for container HEALTHCHECKs: a scratch image has no curl).
    ///
    /// Sends one HTTP GET; exits 0 on a 2xx answer within the timeout, 1 otherwise.
    Healthcheck {
        /// What to request: by default the `ping` endpoint of the API entry point (`traefik`, :8080).
        #[arg(long, default_value = "http://127.0.0.1:8080/ping")]
        url: String,
        /// Give up after this many seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = 3.0, value_parser = parse_timeout)]
        timeout: f64,
    },
    /// Take a server out of rotation or back, through a running bridge-runtime's API.
    ///
    /// `drain`: no new requests or upgrades, what it serves finishes, its WebSockets close after
    /// the grace; `maintenance`: out at once, WebSockets closed now; `ready`: back in rotation.
    /// The state lives in the running process (it survives a reload, not a restart) and shows in
    /// the API, the dashboard and the metrics. Prints the server's new entry; exits 1 when the
    /// proxy refuses (unknown server, 401 without credentials).
    ///
    /// Example: bridge-runtime server drain --api https://proxy:8080 --user admin:s3cret \
    ///   --service central --url http://scadabridge-central-a:5000
    Server {
        /// ready, drain or maintenance.
        #[arg(value_parser = ["ready", "drain", "maintenance"])]
        state: String,
        /// The API entry point of the running proxy.
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        api: String,
        /// The load-balancer service, as in the configuration.
        #[arg(long)]
        service: String,
        /// The server's URL, as in the configuration.
        #[arg(long = "url")]
        server: String,
        /// USER:PASSWORD for the dashboard's basicAuth.
        #[arg(long)]
        user: Option<String>,
        /// PEM CA file to trust for an https API.
        #[arg(long)]
        cacert: Option<String>,
        /// Accept any certificate of an https API.
        #[arg(long)]
        insecure: bool,
    },
}

fn parse_timeout(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 && t <= 3600.0 => Ok(t),
        _ => Err("expected a number of seconds between 0 and 3600".to_owned()),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Command::Verify { plan }) = &cli.command {
        return match bridge_runtime::load::load_plan_file(plan) {
            Ok(p) => {
                println!("{} {}", p.hash, plan.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("bridge-runtime: {}: {e}", plan.display());
                ExitCode::from(2)
            }
        };
    }
    if let Some(Command::Healthcheck { url, timeout }) = cli.command {
        return match bridge_runtime::self_probe::probe(&url, Duration::from_secs_f64(timeout)) {
            Ok(status) => {
                println!("bridge-runtime healthcheck: {url} answered {status}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("bridge-runtime healthcheck: unhealthy: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if let Some(Command::Server {
        state,
        api,
        service,
        server,
        user,
        cacert,
        insecure,
    }) = cli.command
    {
        let req = bridge_runtime::operator::Request {
            api,
            service,
            server,
            state,
            user,
            cacert,
            insecure,
            timeout: Duration::from_secs(10),
        };
        return match bridge_runtime::operator::set_state(&req) {
            Ok(entry) => {
                println!("{entry}");
                ExitCode::SUCCESS
            }
            Err(e @ bridge_runtime::operator::OperatorError::Usage(_)) => {
                eprintln!("bridge-runtime server: {e}");
                ExitCode::from(2)
            }
            Err(e) => {
                eprintln!("bridge-runtime server: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let Some(plan) = cli.serve.plan.clone() else {
        eprintln!("bridge-runtime: error: a plan file is required");
        return ExitCode::from(2);
    };
    // Before any thread exists: taking the passed sockets edits this process's environment.
    match bridge_runtime::notify::take_activated_listeners() {
        Ok(0) => {}
        Ok(n) => eprintln!("bridge-runtime: socket activation: {n} listening socket(s) passed"),
        Err(e) => {
            eprintln!("bridge-runtime: error: {e}");
            return ExitCode::from(2);
        }
    }
    let workers = cli.serve.workers.map_or_else(default_workers, usize::from);
    let built = if workers == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
    };
    let rt = match built {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bridge-runtime: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match rt.block_on(run(plan, cli.serve, workers)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bridge-runtime: error: {e}");
            ExitCode::from(2)
        }
    }
}

/// `TOKIO_WORKER_THREADS` when set (as tokio itself reads it), else the CPUs this process may use.
fn default_workers() -> usize {
    std::env::var("TOKIO_WORKER_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
}

async fn run(path: PathBuf, args: Args, workers: usize) -> Result<(), Box<dyn std::error::Error>> {
    let plan = bridge_runtime::load::load_plan_file(&path)?;
    bridge_runtime::init_logging(&plan.log);
    tracing::info!("plan {} (profile {}) verified", plan.hash, plan.profile);
    tracing::info!("{workers} worker thread(s)");
    let options = args.serve.options(Some(path));
    for (ep, addr) in &options.binds {
        tracing::info!("--bind {ep}={addr}");
    }
    for (host, ip) in &options.resolve {
        tracing::info!("--resolve {host}={ip}");
    }
    bridge_runtime::app::serve(plan, options).await
}
