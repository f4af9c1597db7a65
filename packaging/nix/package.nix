# One cargo package of the workspace (`cargoPackage`), or the whole workspace with its tests
# (`cargoPackage = null; doCheck = true;`), built from Cargo.lock without network access.
{
  lib,
  rustPlatform,
  cargoPackage ? null,
  doCheck ? false,
}:
let
  root = ../..;
  workspace = (builtins.fromTOML (builtins.readFile (root + "/Cargo.toml"))).workspace.package;
in
rustPlatform.buildRustPackage {
  pname = if cargoPackage == null then "bridgectl-workspace" else cargoPackage;
  inherit (workspace) version;
  src = lib.fileset.toSource {
    inherit root;
    fileset = lib.fileset.unions [
      (root + "/Cargo.toml")
      (root + "/Cargo.lock")
      (root + "/clippy.toml")
      (root + "/compiler")
      (root + "/runtime")
      (root + "/schemas")
      (root + "/tests")
      (root + "/profiles")
      (root + "/examples")
      (root + "/docs")
      (root + "/packaging")
    ];
  };
  cargoLock.lockFile = root + "/Cargo.lock";
  cargoBuildFlags = lib.optionals (cargoPackage != null) [
    "-p"
    cargoPackage
  ];
  cargoTestFlags = if cargoPackage == null then [ "--workspace" ] else [ "-p" cargoPackage ];
  # The compatibility corpus lives beside the checkout (shared/compat), not in the source.
  checkFlags = [ "--skip=every_compat_file_is_accepted_or_rejected_for_a_documented_reason" ];
  inherit doCheck;
  meta = {
    description = "Traefik configuration checker, routing-plan compiler and plan-serving proxy";
    license = lib.licenses.asl20;
    mainProgram = if cargoPackage == null then "bridgectl" else cargoPackage;
    platforms = lib.platforms.linux;
  };
}
