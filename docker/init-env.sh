#!/usr/bin/env bash
# Writes docker/.env with fresh secrets for docker-compose.yaml (once; an existing .env is kept, since
# changing the Fernet key would make the stored connections unreadable). The file is for this machine only.
set -euo pipefail
cd "$(dirname "$0")"
if [ -f .env ]; then
  echo "docker/.env exists; keeping it"
  exit 0
fi
umask 077
python3 - > .env <<'PY'
import base64, secrets
print(f"AIRFLOW_FERNET_KEY={base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()}")
print(f"AIRFLOW_JWT_SECRET={secrets.token_hex(32)}")
print(f"AIRFLOW_API_SECRET_KEY={secrets.token_hex(32)}")
print(f"AIRFLOW_ADMIN_PASSWORD={secrets.token_urlsafe(12)}")
print(f"POSTGRES_PASSWORD={secrets.token_hex(16)}")
print(f"S3_ACCESS_KEY=sbcrawl-{secrets.token_hex(4)}")
print(f"S3_SECRET_KEY={secrets.token_hex(20)}")
PY
echo "wrote docker/.env; log in as admin with AIRFLOW_ADMIN_PASSWORD from it"
