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
  ha = cfg.ha;
  vipAddress = builtins.head (builtins.match "([^/]+)/.*" ha.virtualAddress);
  # The same configuration `bridgectl keepalived` writes by hand (packaging/ha/README.md), rendered
  # when the system is built: a bad input fails the build, not the running pair.
  keepalivedConf = pkgs.runCommand "bridge-keepalived.conf" { nativeBuildInputs = [ cfg.compilerPackage ]; } (
    "bridgectl keepalived "
    + lib.escapeShellArgs [
      "--name"
      ha.name
      "--interface"
      ha.interface
      "--vip"
      ha.virtualAddress
      "--self"
      ha.self
      "--peer"
      ha.peer
      "--priority"
      (toString ha.priority)
      "--router-id"
      (toString ha.routerId)
      "--advert"
      (toString ha.advert)
      "--ping-url"
      ha.pingUrl
      "--runtime"
      "${cfg.package}/bin/bridge-runtime"
      "--notify"
      "${pkgs.util-linux}/bin/logger -t bridge-ha"
    ]
    + " --out $out"
  );
  pairs = flag: attrs: lib.concatLists (lib.mapAttrsToList (k: v: [ flag "${k}=${v}" ]) attrs);
  peerPing = if ha.peerPingUrl != null then ha.peerPingUrl else "http://${ha.peer}:8080/ping";
  args =
    pairs "--bind" cfg.binds
    ++ pairs "--resolve" cfg.resolve
    ++ lib.optionals ha.enable [
      "--peer"
      peerPing
    ]
    ++ cfg.extraArgs;
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
    ha = {
      enable = mkEnableOption "keepalived next to bridge-runtime: one virtual address for a pair of appliances (packaging/ha/README.md)";
      name = mkOption {
        type = types.str;
        default = "bridge";
        description = "keepalived's router_id, a name for its logs.";
      };
      interface = mkOption {
        type = types.str;
        description = "The interface carrying the virtual address and the VRRP adverts.";
      };
      virtualAddress = mkOption {
        type = types.str;
        description = "The IPv4 virtual address with its prefix length, e.g. 10.0.0.100/24.";
      };
      self = mkOption {
        type = types.str;
        description = "This appliance's own address on the interface.";
      };
      peer = mkOption {
        type = types.str;
        description = "The other appliance's address (adverts are unicast).";
      };
      priority = mkOption {
        type = types.int;
        description = "1..254, different on the two appliances; the higher takes the address first.";
      };
      routerId = mkOption {
        type = types.int;
        default = 51;
        description = "VRRP virtual_router_id: the same on both appliances, unique on the segment.";
      };
      advert = mkOption {
        type = types.int;
        default = 1;
        description = "Seconds between VRRP adverts.";
      };
      pingUrl = mkOption {
        type = types.str;
        default = "http://127.0.0.1:8080/ping";
        description = "This appliance's /ping, asked every second by keepalived's track script.";
      };
      peerPingUrl = mkOption {
        type = types.nullOr types.str;
        default = null;
        description = "The peer's /ping (default http://<peer>:8080/ping): bridge-runtime --peer compares the plans the two serve.";
      };
      keepalivedPackage = mkOption {
        type = types.package;
        default = pkgs.keepalived;
        description = "The keepalived package.";
      };
    };
    plan = mkOption {
      type = types.package;
      readOnly = true;
      default = plan;
      description = "The compiled plan (a directory holding plan.json).";
    };
  };

  config = lib.mkMerge [
  (mkIf cfg.enable {
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
  })

  (mkIf (cfg.enable && ha.enable) {
    # The host step of packaging/ha/README.md: the address also on lo, answered in ARP only where
    # keepalived puts it, so the appliance that just gave it up still serves what reaches it.
    networking.interfaces.lo.ipv4.addresses = [
      {
        address = vipAddress;
        prefixLength = 32;
      }
    ];
    boot.kernel.sysctl = {
      "net.ipv4.conf.${ha.interface}.arp_ignore" = 1;
      "net.ipv4.conf.${ha.interface}.arp_announce" = 2;
    };
    systemd.services.bridge-keepalived = {
      description = "keepalived: the bridge pair's virtual address";
      wantedBy = [ "multi-user.target" ];
      wants = [ "network-online.target" ];
      after = [
        "network-online.target"
        "bridge.service"
      ];
      restartTriggers = [ keepalivedConf ];
      serviceConfig = {
        Type = "simple";
        ExecStart = lib.escapeShellArgs [
          "${ha.keepalivedPackage}/bin/keepalived"
          "--dont-fork"
          "--log-console"
          "--vrrp"
          "--use-file"
          "${keepalivedConf}"
          "--pid"
          "/run/bridge-keepalived.pid"
          "--vrrp_pid"
          "/run/bridge-keepalived-vrrp.pid"
        ];
        Restart = "always";
        RestartSec = "1s";
      };
    };
  })
  ];
}
