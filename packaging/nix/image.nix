# The appliance image with Nix: a static bridge-runtime and one plan, nothing else (no shell, no
# libc). `streamLayeredImage` gives a script that writes the image to stdout:
#   nix build .#image && ./result | podman load
# Reproducible by construction (store paths, fixed timestamps), like packaging/image/build.sh.
{
  dockerTools,
  bridge-runtime,
  plan,
}:
dockerTools.streamLayeredImage {
  name = "bridge-runtime";
  tag = bridge-runtime.version;
  config = {
    Entrypoint = [
      "${bridge-runtime}/bin/bridge-runtime"
      "${plan}/plan.json"
    ];
    User = "65532:65532";
    ExposedPorts = {
      "80/tcp" = { };
      "8080/tcp" = { };
    };
    Healthcheck = {
      Test = [
        "CMD"
        "${bridge-runtime}/bin/bridge-runtime"
        "healthcheck"
      ];
      Interval = 10000000000;
      Timeout = 4000000000;
      Retries = 3;
    };
    Labels = {
      "org.opencontainers.image.title" = "bridge-runtime";
      "org.opencontainers.image.licenses" = "Apache-2.0";
    };
  };
}
