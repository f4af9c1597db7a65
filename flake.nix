{
  description = "bridgectl: check Traefik configuration, build frozen routing plans, serve them with bridge-runtime";

  # Verified offline here only for syntax and output shape (see README, "Deploying with Nix").
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-25.05";

  outputs =
    { self, nixpkgs }:
    let
      systems = [
        "x86_64-linux"
        "aarch64-linux"
      ];
      forAllSystems = f: nixpkgs.lib.genAttrs systems (system: f system nixpkgs.legacyPackages.${system});
      example = ./examples/scadabridge;
    in
    {
      packages = forAllSystems (
        system: pkgs:
        let
          bridgectl = pkgs.callPackage ./packaging/nix/package.nix { cargoPackage = "bridgectl"; };
          bridge-runtime = pkgs.callPackage ./packaging/nix/package.nix { cargoPackage = "bridge-runtime"; };
          # The appliance binary: statically linked (musl), so the image holds nothing else.
          bridge-runtime-static = pkgs.pkgsStatic.callPackage ./packaging/nix/package.nix {
            cargoPackage = "bridge-runtime";
          };
          plan-example = pkgs.callPackage ./packaging/nix/plan.nix {
            inherit bridgectl;
            name = "scadabridge-dev";
            configDir = example;
            profile = "dev";
          };
        in
        {
          default = bridgectl;
          inherit
            bridgectl
            bridge-runtime
            bridge-runtime-static
            plan-example
            ;
          # `nix build .#image && ./result | podman load`
          image = pkgs.callPackage ./packaging/nix/image.nix {
            bridge-runtime = bridge-runtime-static;
            plan = plan-example;
          };
        }
      );

      apps = forAllSystems (
        system: _pkgs: {
          default = {
            type = "app";
            program = "${self.packages.${system}.bridgectl}/bin/bridgectl";
          };
          bridge-runtime = {
            type = "app";
            program = "${self.packages.${system}.bridge-runtime}/bin/bridge-runtime";
          };
        }
      );

      checks = forAllSystems (
        system: pkgs:
        let
          inherit (self.packages.${system}) bridgectl;
        in
        {
          # The workspace test suite (cargo test --workspace), as in .ci/run.
          tests = pkgs.callPackage ./packaging/nix/package.nix {
            cargoPackage = null;
            doCheck = true;
          };
          # The bundled example checks clean and builds; its plan is what the image serves.
          example-plan = self.packages.${system}.plan-example;
          # A bad configuration fails the build of its plan (and so the system build).
          bad-config-fails = pkgs.testers.testBuildFailure (
            pkgs.callPackage ./packaging/nix/plan.nix {
              inherit bridgectl;
              name = "bad-duplicate-key";
              configDir = ./tests/fixtures/bad/03-yaml-duplicate-key;
              profile = "dev";
            }
          );
          # The NixOS module evaluates into a system (no VM: that needs KVM).
          module =
            (nixpkgs.lib.nixosSystem {
              inherit system;
              modules = [
                self.nixosModules.default
                {
                  boot.isContainer = true;
                  system.stateVersion = "25.05";
                  services.bridge = {
                    enable = true;
                    configDir = example;
                    profile = "dev";
                  };
                }
              ];
            }).config.system.build.toplevel;
        }
      );

      devShells = forAllSystems (
        _system: pkgs: {
          default = pkgs.mkShell {
            packages = [
              pkgs.cargo
              pkgs.rustc
              pkgs.clippy
              pkgs.rustfmt
              pkgs.buildah
              pkgs.podman
              pkgs.runc
            ];
          };
        }
      );

      formatter = forAllSystems (_system: pkgs: pkgs.nixfmt-rfc-style);

      nixosModules.default = import ./packaging/nix/module.nix self;
    };
}
