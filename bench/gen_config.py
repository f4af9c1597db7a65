#!/usr/bin/env python3
"""Writes a Traefik configuration directory with N routers and N services (plus the seed's entry point)
for bridgectl's `check` benchmark. Deterministic: the same N gives the same bytes."""
import os
import sys


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: gen_config.py N OUT_DIR")
    n, out = int(sys.argv[1]), sys.argv[2]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "traefik.yml"), "w") as f:
        f.write('entryPoints:\n  web:\n    address: ":80"\napi:\n  dashboard: true\n  insecure: true\n'
                "providers:\n  file:\n    filename: /etc/traefik/dynamic.yml\n")
    with open(os.path.join(out, "dynamic.yml"), "w") as f:
        f.write("http:\n  routers:\n")
        for i in range(n):
            f.write(f"    r{i}:\n      rule: \"Host(`app{i}.example.com`) && PathPrefix(`/api/v{i % 7}`)\"\n"
                    f"      service: s{i}\n      entryPoints: [web]\n      middlewares: [strip]\n")
        f.write("  middlewares:\n    strip:\n      stripPrefix:\n        prefixes: [/api]\n")
        f.write("  services:\n")
        for i in range(n):
            f.write(f"    s{i}:\n      loadBalancer:\n        healthCheck:\n          path: /health/active\n"
                    f"          interval: 5s\n          timeout: 3s\n        servers:\n"
                    f"          - url: \"http://10.0.{i // 250}.{i % 250 + 1}:5000\"\n"
                    f"          - url: \"http://10.1.{i // 250}.{i % 250 + 1}:5000\"\n")


if __name__ == "__main__":
    main()
