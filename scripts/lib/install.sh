# shellcheck shell=bash
# Sourced by the scripts that drive real clients: installs through apt-get, when any is missing,
# PostgreSQL 15 (the reference server, psql and pgbench), sysbench, fio (which `steady bench
# fragmented-scan` measures the disk with), and openssl (the TLS tests make their certificates).

ensure_clients() {
  if [ -x /usr/lib/postgresql/15/bin/postgres ] && [ -x /usr/lib/postgresql/15/bin/pgbench ] \
    && command -v sysbench >/dev/null && command -v fio >/dev/null && command -v openssl >/dev/null; then
    return 0
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 postgresql-client-15 sysbench fio openssl >/dev/null
}
