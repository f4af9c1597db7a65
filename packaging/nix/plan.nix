# `bridgectl build` as a derivation: the plan is compiled when the system (or image) is built, so a
# bad configuration fails the build with bridgectl's located diagnostics instead of failing the
# running service. The output directory holds plan.json.
#
# Everything the configuration references (users files, certificates named by --var) must be in
# the Nix store or inside configDir: the build runs in the sandbox, not on the target host.
{
  lib,
  runCommand,
  bridgectl,
  name,
  configDir,
  profile ? "prod",
  vars ? { },
}:
let
  varArgs = lib.concatStringsSep " " (
    lib.mapAttrsToList (k: v: "--var ${lib.escapeShellArg "${k}=${v}"}") vars
  );
in
runCommand "bridge-plan-${name}" { nativeBuildInputs = [ bridgectl ]; } ''
  mkdir -p $out
  bridgectl build ${configDir} --profile ${lib.escapeShellArg profile} ${varArgs} --out $out/plan.json
''
