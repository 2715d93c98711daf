"""The controller's and the backtest's Prometheus clients against a real Prometheus serving HTTPS only
(`--web.config.file` with a certificate signed by a test CA), as a Prometheus behind the cluster's own CA is.

With `--prometheus-ca-file` both read the emulator's series; without it the certificate is refused, and the
source reports a connection error (it never falls back to plain HTTP or skips verification).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from autoscaler.backtest.prom_range import PrometheusRange
from autoscaler.emulator.server import EmulatorServer
from autoscaler.sources.prom_api import PrometheusAPI, SourceError
from autoscaler.sources.prom_auth import PromAuth

from .conftest import MODEL, REPLICAS, PrometheusProcess, scraping_prometheus

pytestmark = pytest.mark.integration


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def make_tls(folder: Path) -> tuple[Path, Path, Path]:
    """A CA, and a certificate it signs for 127.0.0.1: (ca.pem, server.pem, server.key)."""
    now = dt.datetime.now(dt.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test Prometheus CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
          .not_valid_after(now + dt.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(_pem_key(key))
    return paths


@pytest.fixture(scope="module")
def tls_prometheus(emulator: EmulatorServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    folder = tmp_path_factory.mktemp("prometheus-tls")
    with scraping_prometheus(emulator, folder, tls=make_tls(folder)) as prom:
        yield prom


def test_with_the_ca_file_both_clients_read_the_series(tls_prometheus: PrometheusProcess) -> None:
    assert tls_prometheus.url.startswith("https://") and tls_prometheus.ca_file is not None
    auth = PromAuth.from_settings(ca_file=str(tls_prometheus.ca_file), headers=["X-Scope-OrgID: team-a"])
    api = PrometheusAPI(tls_prometheus.url, auth=auth)
    try:
        samples = api.query(f'vllm:num_requests_waiting{{model_name="{MODEL}"}}', time.time())
    finally:
        api.close()
    assert len(samples) == REPLICAS
    now = time.time()
    history = PrometheusRange(tls_prometheus.url, auth=auth)
    try:
        frame = history.query_range(f'sum(vllm:num_requests_running{{model_name="{MODEL}"}})', now - 30, now, 5.0)
    finally:
        history.close()
    assert len(frame) >= 1


def test_without_it_the_certificate_is_refused(tls_prometheus: PrometheusProcess) -> None:
    api = PrometheusAPI(tls_prometheus.url)
    try:
        with pytest.raises(SourceError) as e:
            api.query("up", time.time())
    finally:
        api.close()
    assert e.value.kind == "connect" and "CERTIFICATE_VERIFY_FAILED" in e.value.detail.upper().replace(" ", "_")
    history = PrometheusRange(tls_prometheus.url)
    try:
        with pytest.raises(SourceError) as e2:
            history.query_range("up", time.time() - 30, time.time(), 5.0)
    finally:
        history.close()
    assert e2.value.kind == "connect"


def test_a_rotated_ca_is_trusted_without_a_restart(emulator: EmulatorServer, tmp_path: Path) -> None:
    """The CA bundle file is replaced in place (as a ConfigMap update swaps it) and Prometheus is given a
    certificate the new CA signs (its web config's files are read again at each handshake): the same
    client, built before, verifies against the new bundle once its old connections have expired."""
    served = make_tls(tmp_path)
    bundle = tmp_path / "mounted-ca.pem"
    bundle.write_bytes(served[0].read_bytes())
    with scraping_prometheus(emulator, tmp_path, tls=served) as prom:
        api = PrometheusAPI(prom.url, auth=PromAuth.from_settings(ca_file=str(bundle)))
        try:
            assert api.query("up", time.time())
            (tmp_path / "rotated").mkdir()
            rotated = make_tls(tmp_path / "rotated")
            served[2].write_bytes(rotated[2].read_bytes())
            served[1].write_bytes(rotated[1].read_bytes())
            swap = tmp_path / "mounted-ca.pem.new"
            swap.write_bytes(rotated[0].read_bytes())
            swap.replace(bundle)
            time.sleep(6.0)  # past httpx's 5-s keep-alive: the next query opens a new TLS connection
            assert api.query("up", time.time())
            bundle.write_bytes(b"-----BEGIN CERTIFICATE-----\n")  # caught half-written: the last good one serves
            assert api.query("up", time.time())
            stale = PrometheusAPI(prom.url, auth=PromAuth.from_settings(ca_file=str(served[0])))
            try:  # the old CA no longer verifies what Prometheus serves: the rotation took place
                with pytest.raises(SourceError) as e:
                    stale.query("up", time.time())
            finally:
                stale.close()
            assert e.value.kind == "connect"
        finally:
            api.close()
