# Stand-in package set: every package is a derivation that builds nothing but remembers the
# arguments it was given (`stubArgs`), so tests can inspect what the flake asks for.
{ lib, system }:
let
  stub =
    name: args:
    derivation {
      inherit name system;
      builder = "/bin/sh";
      args = [
        "-c"
        "echo 'stub nixpkgs: nothing is built' > $out"
      ];
    }
    // {
      stubArgs = args;
      version = args.version or "0";
    };
  pkgs = {
    inherit lib system;
    stdenv.hostPlatform.system = system;
    callPackage =
      f: overrides:
      let
        fn = if builtins.isFunction f then f else import f;
        wanted = builtins.functionArgs fn;
      in
      fn (builtins.intersectAttrs wanted pkgs // overrides);
    pkgsStatic = pkgs;
    rustPlatform.buildRustPackage = args: stub "${args.pname}-${args.version}" args;
    runCommand = name: env: script: stub name (env // { buildCommand = script; });
    testers.testBuildFailure = drv: stub "build-failure-${drv.name}" { inherit drv; };
    mkShell = args: stub "shell" args;
    dockerTools.streamLayeredImage = args: stub "stream-${args.name}" args;
  }
  // lib.genAttrs [
    "cargo"
    "rustc"
    "clippy"
    "rustfmt"
    "buildah"
    "podman"
    "runc"
    "coreutils"
    "keepalived"
    "util-linux"
    "nixfmt-rfc-style"
  ] (n: stub n { });
in
pkgs
