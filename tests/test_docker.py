"""docker/ checked without a Docker daemon: the compose file is interpolated with the secrets docker/init-env.sh
writes (as ``docker compose config`` would) and its invariants asserted: Airflow 3's own layout, one set of
secrets shared by every Airflow container, connections that parse, healthchecks, pinned images."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DOCKER = REPO / "docker"
AIRFLOW_SERVICES = {"airflow-init", "airflow-apiserver", "airflow-scheduler", "airflow-dag-processor",
                    "airflow-triggerer", "airflow-worker"}
SHARED_SECRETS = ("AIRFLOW__API_AUTH__JWT_SECRET", "AIRFLOW__API__SECRET_KEY", "AIRFLOW__CORE__FERNET_KEY")
_VAR = re.compile(r"\$\{([A-Z0-9_]+)(?::\?[^}]*)?\}")


@pytest.fixture(scope="module")
def env_file(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("docker")
    shutil.copy(DOCKER / "init-env.sh", folder / "init-env.sh")
    subprocess.run(["bash", str(folder / "init-env.sh")], check=True, capture_output=True, timeout=60)
    assert (folder / ".env").stat().st_mode & 0o077 == 0  # secrets readable by the owner only
    values = dict(line.split("=", 1) for line in (folder / ".env").read_text().splitlines() if "=" in line)
    # a second run keeps the file: a new Fernet key would make stored connections unreadable
    before = (folder / ".env").read_text()
    subprocess.run(["bash", str(folder / "init-env.sh")], check=True, capture_output=True, timeout=60)
    assert (folder / ".env").read_text() == before
    return values


@pytest.fixture(scope="module")
def compose(env_file) -> dict:
    # $$ is compose's escape for a literal $ (kept for the container's shell)
    text = (DOCKER / "docker-compose.yaml").read_text().replace("$$", "\0")
    missing = sorted(set(_VAR.findall(text)) - set(env_file))
    assert missing == [], f"variables the compose file needs but init-env.sh does not write: {missing}"
    interpolated = _VAR.sub(lambda m: env_file[m.group(1)], text).replace("\0", "$")
    return yaml.safe_load(interpolated)


def test_official_airflow_3_layout_with_seaweedfs(compose):
    services = compose["services"]
    assert set(services) == AIRFLOW_SERVICES | {"postgres", "redis", "seaweedfs"}
    commands = {name: services[name].get("command") for name in AIRFLOW_SERVICES - {"airflow-init"}}
    assert commands == {"airflow-apiserver": "api-server", "airflow-scheduler": "scheduler",
                        "airflow-dag-processor": "dag-processor", "airflow-triggerer": "triggerer",
                        "airflow-worker": "celery worker"}
    assert "-tableBucket=lake" in services["seaweedfs"]["command"]  # the lake's Iceberg catalog


def test_every_airflow_container_shares_the_same_secrets_and_executor(compose, env_file):
    services = compose["services"]
    envs = {name: services[name]["environment"] for name in AIRFLOW_SERVICES}
    for key in (*SHARED_SECRETS, "AIRFLOW__CORE__EXECUTOR", "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN",
                "AIRFLOW__CELERY__BROKER_URL", "AIRFLOW__CORE__EXECUTION_API_SERVER_URL"):
        values = {env.get(key) for env in envs.values()}
        assert len(values) == 1 and None not in values, key
    env = envs["airflow-worker"]
    assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert env["AIRFLOW__API_AUTH__JWT_SECRET"] == env_file["AIRFLOW_JWT_SECRET"]
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://airflow-apiserver:8080/execution/"
    from cryptography.fernet import Fernet

    Fernet(env["AIRFLOW__CORE__FERNET_KEY"])  # a valid Fernet key
    assert env["AIRFLOW__CELERY__BROKER_URL"].startswith("redis://redis:6379/")
    assert "@postgres/airflow" in env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
    assert env_file["POSTGRES_PASSWORD"] == services["postgres"]["environment"]["POSTGRES_PASSWORD"]


def test_connections_for_s3_and_the_lake_parse_and_point_at_seaweedfs(compose, env_file):
    env = compose["services"]["airflow-worker"]["environment"]
    s3 = json.loads(env["AIRFLOW_CONN_AWS_DEFAULT"])
    assert s3["conn_type"] == "aws" and s3["extra"]["endpoint_url"] == "http://seaweedfs:8333"
    assert (s3["login"], s3["password"]) == (env_file["S3_ACCESS_KEY"], env_file["S3_SECRET_KEY"])
    lake = json.loads(env["AIRFLOW_CONN_SBCRAWL_LAKE"])
    assert lake["conn_type"] == "sbcrawl_iceberg" and lake["extra"]["uri"] == "http://seaweedfs:8181"
    assert lake["extra"]["warehouse"] == "lake"
    weed_env = compose["services"]["seaweedfs"]["environment"]
    assert (weed_env["AWS_ACCESS_KEY_ID"], weed_env["AWS_SECRET_ACCESS_KEY"]) == (s3["login"], s3["password"])
    assert env["AIRFLOW__SBCRAWL__LAKE_CONN_ID"] == "sbcrawl_lake" and env["AIRFLOW__SBCRAWL__AWS_CONN_ID"] == \
        "aws_default"
    # the providers' list is inside the mounted DAG folder, where the repository keeps it
    assert "../dags:/opt/airflow/dags" in compose["services"]["airflow-worker"]["volumes"]
    assert env["AIRFLOW__SBCRAWL__PROVIDERS_FILE"] == "/opt/airflow/dags/providers.yaml"
    assert (REPO / "dags" / "providers.yaml").is_file()


def test_documented_login_is_the_one_the_auth_manager_gets(compose, env_file):
    services = compose["services"]
    env = services["airflow-apiserver"]["environment"]
    user = env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"].split(":")[0]
    init = services["airflow-init"]
    script = init["command"][-1]
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"] in script and f'{{"{user}": ' in script
    assert init["environment"]["ADMIN_PASSWORD"] == env_file["AIRFLOW_ADMIN_PASSWORD"]
    assert f'user "{user}"' in (DOCKER / "docker-compose.yaml").read_text()


def test_healthchecks_dependencies_and_pinned_images(compose):
    services = compose["services"]
    for name, service in services.items():
        image = service["image"]
        assert ":" in image and not image.endswith(":latest") and re.search(r":\d", image), (name, image)
        if name != "airflow-init":
            assert service.get("healthcheck", {}).get("test"), f"{name} has no healthcheck"
    for name in AIRFLOW_SERVICES:
        deps = services[name]["depends_on"]
        for needed in ("postgres", "redis", "seaweedfs"):
            assert deps[needed]["condition"] == "service_healthy", (name, needed)
        if name != "airflow-init":
            assert deps["airflow-init"]["condition"] == "service_completed_successfully", name
    base = re.search(r"^FROM (\S+)", (DOCKER / "Dockerfile").read_text(), re.M).group(1)
    assert re.fullmatch(r"apache/airflow:3\.\d+\.\d+-python3\.\d+", base)
    assert services["airflow-worker"]["stop_grace_period"] == "60s"  # on_kill checkpoints before SIGKILL
