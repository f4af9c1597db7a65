# Stand-in for the few nixpkgs `lib` functions bridgectl's flake and module use, so their output
# shape and the module's generated unit can be evaluated offline (nixpkgs cannot be fetched here).
# Semantics are simplified: options are plain attribute sets, mkIf is a plain `if`.
rec {
  genAttrs = names: f: builtins.listToAttrs (map (n: { name = n; value = f n; }) names);
  mapAttrs = builtins.mapAttrs;
  mapAttrsToList = f: attrs: map (n: f n attrs.${n}) (builtins.attrNames attrs);
  concatLists = builtins.concatLists;
  concatStringsSep = builtins.concatStringsSep;
  optionals = cond: list: if cond then list else [ ];
  escapeShellArg = arg: "'" + builtins.replaceStrings [ "'" ] [ "'\\''" ] (toString arg) + "'";
  escapeShellArgs = args: concatStringsSep " " (map escapeShellArg args);
  fileset = {
    unions = list: list;
    toSource = { root, fileset }: root;
  };
  licenses.asl20 = "Apache-2.0";
  platforms.linux = [
    "x86_64-linux"
    "aarch64-linux"
  ];
  mkOption = attrs: attrs // { _type = "option"; };
  mkEnableOption = what: mkOption {
    type = types.bool;
    default = false;
    description = "Whether to enable ${what}.";
  };
  mkIf = cond: content: if cond then content else { };
  recursiveUpdate =
    a: b:
    a
    // builtins.mapAttrs (
      k: v: if builtins.isAttrs v && builtins.isAttrs (a.${k} or null) && !(v ? type) then recursiveUpdate a.${k} v else v
    ) b;
  mkMerge = list: builtins.foldl' recursiveUpdate { } list;
  types = {
    bool = "bool";
    str = "str";
    path = "path";
    package = "package";
    int = "int";
    attrsOf = t: "attrsOf ${t}";
    listOf = t: "listOf ${t}";
    nullOr = t: "nullOr ${t}";
  };
}
