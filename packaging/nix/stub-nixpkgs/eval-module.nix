# Evaluates packaging/nix/module.nix with the stub lib and packages and returns what it generates,
# for tests/appliance.rs:  nix-instantiate --eval --strict --json eval-module.nix
# (Option defaults are taken from the module's own option declarations.)
let
  lib = import ./lib.nix;
  system = "x86_64-linux";
  pkgs = import ./pkgs.nix { inherit lib system; };
  self.packages.${system} = {
    bridge-runtime = pkgs.runCommand "bridge-runtime" { } "";
    bridgectl = pkgs.runCommand "bridgectl" { } "";
  };
  module = import ../module.nix self;
  eval =
    cfg:
    module {
      config.services.bridge = cfg;
      inherit lib pkgs;
    };
  declared = (eval { }).options.services.bridge;
  defaults = lib.mapAttrs (_: o: o.default) (
    removeAttrs declared [
      "configDir"
      "plan"
      "ha"
    ]
  );
  haDefaults = lib.mapAttrs (_: o: o.default or null) declared.ha;
  cfg = defaults // {
    enable = true;
    configDir = ../../../examples/scadabridge;
    profile = "prod";
    vars.domain = "scadabridge.example.com";
    binds.web = "0.0.0.0:80";
    resolve.scadabridge-central-a = "10.0.0.11";
    ha = haDefaults;
  };
  paired = eval (
    cfg
    // {
      ha = haDefaults // {
        enable = true;
        name = "bridge-a";
        interface = "eth0";
        virtualAddress = "10.0.0.100/24";
        self = "10.0.0.1";
        peer = "10.0.0.2";
        priority = 150;
      };
    }
  );
  haService = paired.config.systemd.services.bridge-keepalived;
  enabled = eval cfg;
  planOption = enabled.options.services.bridge.plan;
in
{
  options = builtins.attrNames declared;
  haOptions = builtins.attrNames declared.ha;
  haUnpaired = enabled.config.systemd.services ? bridge-keepalived;
  haExec = haService.serviceConfig.ExecStart;
  pairedRuntimeExec = paired.config.systemd.services.bridge.serviceConfig.ExecStart;
  haConfBuild = (builtins.head haService.restartTriggers).stubArgs.buildCommand;
  haSysctl = paired.config.boot.kernel.sysctl;
  haLo = paired.config.networking.interfaces.lo.ipv4.addresses;
  pairedKeepsBridge = paired.config.systemd.services ? bridge;
  disabled = (eval (cfg // { enable = false; })).config;
  service = removeAttrs enabled.config.systemd.services.bridge [ "reloadTriggers" ];
  reloadTriggers = map (d: d.name) enabled.config.systemd.services.bridge.reloadTriggers;
  etc = enabled.config.environment.etc;
  planName = planOption.default.name;
  planReadOnly = planOption.readOnly;
  planBuild = planOption.default.stubArgs.buildCommand;
  planInputs = map (d: d.name) planOption.default.stubArgs.nativeBuildInputs;
}
