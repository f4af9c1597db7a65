# services.bridge: bridge-runtime under systemd, serving a plan that `bridgectl build` compiles
# from `configDir` when the system is built — a bad configuration fails `nixos-rebuild` (or
# `nix flake check`) with bridgectl's diagnostics, never the running service.
#
# The unit matches packaging/systemd/bridge-runtime.service (a test compares the hardening):
# Type=notify (READY=1 after the listeners are bound and the first probe round), SIGHUP reload,
# DynamicUser, CAP_NET_BIND_SERVICE only, ProtectSystem=strict. A new plan is applied with a
# reload, not a restart: /etc/bridge/plan.json points at the new plan and the unit is reloaded.
self:
{
  config,
  lib,
  pkgs,
  ...
}:
let
  cfg = config.services.bridge;
  inherit (lib)
    mkEnableOption
    mkOption
    mkIf
    types
    ;
  system = pkgs.stdenv.hostPlatform.system;
  plan = pkgs.callPackage ./plan.nix {
    bridgectl = cfg.compilerPackage;
    name = "nixos";
    inherit (cfg) configDir profile vars;
  };
  pairs = flag: attrs: lib.concatLists (lib.mapAttrsToList (k: v: [ flag "${k}=${v}" ]) attrs);
  args = pairs "--bind" cfg.binds ++ pairs "--resolve" cfg.resolve ++ cfg.extraArgs;
in
{
  options.services.bridge = {
    enable = mkEnableOption "bridge-runtime, serving a bridgectl routing plan";
    package = mkOption {
      type = types.package;
      default = self.packages.${system}.bridge-runtime;
      description = "The bridge-runtime package.";
    };
    compilerPackage = mkOption {
      type = types.package;
      default = self.packages.${system}.bridgectl;
      description = "The bridgectl package that compiles the plan at build time.";
    };
    configDir = mkOption {
      type = types.path;
      description = "Traefik configuration directory (plays /etc/traefik: traefik.yml and the file provider's files).";
    };
    profile = mkOption {
      type = types.str;
      default = "prod";
      description = "bridgectl profile: dev, prod, or a profile file inside configDir.";
    };
    vars = mkOption {
      type = types.attrsOf types.str;
      default = { };
      description = "--var NAME=VALUE for the profile and the configuration's templates (no secrets: they end up in the store).";
    };
    binds = mkOption {
      type = types.attrsOf types.str;
      default = { };
      description = "--bind ENTRYPOINT=ADDR overrides of entry point addresses.";
    };
    resolve = mkOption {
      type = types.attrsOf types.str;
      default = { };
      description = "--resolve HOST=IP pins for backend host names.";
    };
    stateDirectory = mkOption {
      type = types.str;
      default = "bridge";
      description = "StateDirectory= of the service: /var/lib/<name>, mode 0700, the only writable place (ACME storage: set certificatesResolvers.<resolver>.acme.storage to /var/lib/<name>/acme.json).";
    };
    extraArgs = mkOption {
      type = types.listOf types.str;
      default = [ ];
      description = "Further bridge-runtime arguments.";
    };
    plan = mkOption {
      type = types.package;
      readOnly = true;
      default = plan;
      description = "The compiled plan (a directory holding plan.json).";
    };
  };

  config = mkIf cfg.enable {
    environment.etc."bridge/plan.json".source = "${plan}/plan.json";

    systemd.services.bridge = {
      description = "bridge-runtime: serves a frozen bridgectl routing plan";
      wantedBy = [ "multi-user.target" ];
      wants = [ "network-online.target" ];
      after = [ "network-online.target" ];
      # A new plan is applied by SIGHUP (verified, swapped atomically), not by a restart.
      reloadTriggers = [ plan ];
      startLimitIntervalSec = 300;
      startLimitBurst = 5;
      serviceConfig = {
        Type = "notify";
        NotifyAccess = "main";
        ExecStart = lib.escapeShellArgs (
          [
            "${cfg.package}/bin/bridge-runtime"
            "/etc/bridge/plan.json"
          ]
          ++ args
        );
        ExecReload = "${pkgs.coreutils}/bin/kill -HUP $MAINPID";
        KillMode = "mixed";
        TimeoutStopSec = 30;
        Restart = "on-failure";
        RestartSec = "1s";
        RestartPreventExitStatus = 2;

        DynamicUser = true;
        AmbientCapabilities = "CAP_NET_BIND_SERVICE";
        CapabilityBoundingSet = "CAP_NET_BIND_SERVICE";
        NoNewPrivileges = true;
        SecureBits = "noroot-locked";

        StateDirectory = cfg.stateDirectory;
        StateDirectoryMode = "0700";
        ProtectSystem = "strict";
        ProtectHome = true;
        PrivateTmp = true;
        PrivateDevices = true;
        UMask = "0077";
        ProtectProc = "invisible";
        ProcSubset = "pid";

        ProtectKernelTunables = true;
        ProtectKernelModules = true;
        ProtectKernelLogs = true;
        ProtectControlGroups = true;
        ProtectClock = true;
        ProtectHostname = true;
        PrivateUsers = false;
        RestrictNamespaces = true;
        RestrictRealtime = true;
        RestrictSUIDSGID = true;
        LockPersonality = true;
        MemoryDenyWriteExecute = true;
        RemoveIPC = true;
        DevicePolicy = "closed";
        KeyringMode = "private";

        RestrictAddressFamilies = [
          "AF_INET"
          "AF_INET6"
          "AF_UNIX"
        ];
        SystemCallArchitectures = "native";
        SystemCallFilter = [
          "@system-service"
          "~@privileged @resources"
        ];
        SystemCallErrorNumber = "EPERM";

        LimitNOFILE = 65536;
        TasksMax = 4096;
      };
    };
  };
}
