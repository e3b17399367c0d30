# The exporter's system user, from the sysusers file the package installs when systemd-sysusers is
# there, else with useradd (a host or container image without systemd). An existing user is kept.
if command -v systemd-sysusers >/dev/null 2>&1; then
  systemd-sysusers infiniband-exporter.conf
elif ! getent passwd infiniband-exporter >/dev/null; then
  useradd --system --user-group --home-dir / --no-create-home --shell /usr/sbin/nologin \
    --comment "Prometheus InfiniBand exporter" infiniband-exporter
fi
