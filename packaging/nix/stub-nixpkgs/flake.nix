{
  description = "Offline stand-in for nixpkgs (tests only): the attributes bridgectl's flake uses, with derivations that build nothing";

  outputs =
    { self }:
    let
      lib = import ./lib.nix;
      systems = [
        "x86_64-linux"
        "aarch64-linux"
      ];
    in
    {
      lib = lib // {
        # Evaluates nothing of the modules; `checks.module` is only shape-checked here. The module
        # itself is evaluated by tests/appliance.rs with lib.nix.
        nixosSystem =
          { system, modules }:
          {
            config.system.build.toplevel = (import ./pkgs.nix { inherit lib system; }).coreutils;
          };
      };
      legacyPackages = lib.genAttrs systems (system: import ./pkgs.nix { inherit lib system; });
    };
}
