"""The outbound guard: every SSRF URL form refused for a tenant-configured URL, on the
static check and at connect time (DNS rebinding), and what the operator allow-lists works.

The stand-in servers listen on 127.0.0.1, which tests/conftest.py allow-lists the way an
operator would; the tests here that need the guard closed set the allow-list to empty.
"""

from __future__ import annotations

import ssl

import pytest

from persistence.services.companies import company_config_set
from synthorg.embedding import EmbeddingError, OpenAICompatibleEmbedder
from synthorg.errors import InvalidInputError
from synthorg.llm import completion_provider_from_settings
from synthorg.outbound import (
    GuardedTransport,
    OutboundPolicy,
    OutboundRefused,
    UnsafeURLError,
    check_url,
    guarded_client,
    parse_allow_list,
)
from tests.persistence.factories import CompanyFactory
from tests.support.openai_server import FakeOpenAIServer

HINT = "The server operator may allow-list a host or range with SYNTHORG_OUTBOUND_ALLOW"

# url -> the exact refusal (message of UnsafeURLError)
SSRF_FORMS = {
    "http://127.0.0.1/": "'127.0.0.1' is refused: it is a loopback address",
    "http://127.1:8080/": "'127.1' is refused: it is a loopback address",
    "http://0x7f000001/": "'0x7f000001' is refused: it is a loopback address",
    "http://2130706433/": "'2130706433' is refused: it is a loopback address",
    "http://017700000001/": "'017700000001' is refused: it is a loopback address",
    "http://0.0.0.0:9200/": "'0.0.0.0' is refused: it is the unspecified address",
    "http://[::1]/": "'::1' is refused: it is a loopback address",
    "http://[::]/": "'::' is refused: it is the unspecified address",
    "http://[::ffff:127.0.0.1]/": (
        "'::ffff:127.0.0.1' is refused: it is an IPv6 form of 127.0.0.1, a loopback address"
    ),
    "http://[::ffff:169.254.169.254]/": (
        "'::ffff:169.254.169.254' is refused: it is an IPv6 form of 169.254.169.254, "
        "a link-local address (cloud metadata lives here)"
    ),
    "http://169.254.169.254/latest/meta-data/": (
        "'169.254.169.254' is refused: it is a link-local address (cloud metadata lives here)"
    ),
    "http://metadata.google.internal/computeMetadata/v1/": (
        "'metadata.google.internal' is refused: it is a cloud metadata service"
    ),
    "http://10.0.0.5/": "'10.0.0.5' is refused: it is a private address",
    "http://172.16.3.4/": "'172.16.3.4' is refused: it is a private address",
    "https://192.168.1.1/": "'192.168.1.1' is refused: it is a private address",
    "http://100.64.0.1/": "'100.64.0.1' is refused: it is a shared (CGNAT) address",
    "http://224.0.0.251/": "'224.0.0.251' is refused: it is a multicast address",
    "http://[fd00:ec2::254]/": "'fd00:ec2::254' is refused: it is a private address",
    "http://[fe80::1]/": (
        "'fe80::1' is refused: it is a link-local address (cloud metadata lives here)"
    ),
    "http://localhost:5432/": "'localhost' is refused: it is a loopback name",
    "http://db.localhost/": "'db.localhost' is refused: it is a loopback name",
}
SCHEME_FORMS = {
    "file:///etc/passwd": "must be an http:// or https:// URL (got 'file')",
    "gopher://127.0.0.1:6379/_INFO": "must be an http:// or https:// URL (got 'gopher')",
    "ftp://example.com/x": "must be an http:// or https:// URL (got 'ftp')",
    "dict://127.0.0.1:11211/stat": "must be an http:// or https:// URL (got 'dict')",
}


@pytest.mark.parametrize(("url", "why"), SSRF_FORMS.items())
def test_every_internal_address_form_is_refused(url, why):
    with pytest.raises(UnsafeURLError) as caught:
        check_url(url, policy=OutboundPolicy())
    assert str(caught.value) == f"{why}. {HINT}"


@pytest.mark.parametrize(("url", "why"), SCHEME_FORMS.items())
def test_only_http_and_https(url, why):
    with pytest.raises(UnsafeURLError) as caught:
        check_url(url, policy=parse_allow_list("0.0.0.0/0"))  # not even when allow-listed
    assert str(caught.value) == why


def test_public_and_allow_listed_urls_pass():
    assert check_url("https://api.openai.com/v1", policy=OutboundPolicy()) == (
        "https://api.openai.com/v1"
    )
    policy = parse_allow_list("10.0.0.0/8, embedder.internal,[fd00::]/8")
    for url in ("http://10.2.3.4:8080/v1", "http://embedder.internal/v1", "http://[fd00::7]/"):
        assert check_url(url, policy=policy) == url
    with pytest.raises(UnsafeURLError):
        check_url("http://192.168.0.1/", policy=policy)


def test_a_malformed_allow_list_entry_is_an_error():
    with pytest.raises(ValueError, match="'host!' is neither a host name nor an IP range"):
        parse_allow_list("10.0.0.0/8,host!")


def test_a_name_that_resolves_to_loopback_is_refused_at_connect_time():
    """DNS rebinding: the name passed the configure-time check (no DNS there); at connect
    time it resolves to 127.0.0.1, and no connection is opened."""
    resolved = []

    def resolver(host, port):
        resolved.append(host)
        return ["8.8.8.8", "127.0.0.1"]  # one public, one loopback: refused

    with FakeOpenAIServer() as server:
        port = server.base_url.split(":")[2].split("/")[0]
        url = f"http://rebound.example:{port}/v1/models"
        assert check_url(url, policy=OutboundPolicy()) == url
        with (
            guarded_client(OutboundPolicy(), resolver=resolver) as client,
            pytest.raises(OutboundRefused) as caught,
        ):
            client.get(url)
        assert server.requests == []
    assert resolved == ["rebound.example"]
    assert str(caught.value) == (
        f"'rebound.example' is refused: it resolves to 127.0.0.1 (a loopback address). {HINT}"
    )


def test_a_resolved_allow_listed_address_connects_with_the_original_host_header():
    with FakeOpenAIServer() as server:
        port = server.base_url.split(":")[2].split("/")[0]
        policy = parse_allow_list("127.0.0.0/8")
        with guarded_client(policy, resolver=lambda host, port: ["127.0.0.1"]) as client:
            response = client.get(f"http://embedder.internal:{port}/v1/models")
        assert response.status_code == 200
        [request] = server.requests
        assert request.headers["host"] == f"embedder.internal:{port}"


def test_the_embedder_refuses_a_loopback_endpoint_unless_allow_listed(settings):
    with FakeOpenAIServer(embedding_dims=8) as server:
        settings.SYNTHORG_OUTBOUND_ALLOW = ""
        embedder = OpenAICompatibleEmbedder(server.base_url, "m", 8, max_retries=3)
        with pytest.raises(EmbeddingError) as caught:
            embedder.embed(["hello"])
        assert str(caught.value) == (
            f"embedding request to {server.base_url}/embeddings (model 'm') refused: "
            f"'127.0.0.1' is refused: it is a loopback address. {HINT}"
        )
        assert server.requests == []  # refused at once, not retried
        settings.SYNTHORG_OUTBOUND_ALLOW = "127.0.0.1"  # read at each connection
        assert embedder.embed(["hello"]).shape == (1, 8)
        embedder.close()


def test_the_operators_llm_url_counts_as_allow_listed(settings):
    with FakeOpenAIServer(chat_reply="hi") as server:
        settings.SYNTHORG_OUTBOUND_ALLOW = ""
        settings.SYNTHORG_LLM = {"BASE_URL": server.base_url, "MODEL": "", "MAX_RETRIES": 0}
        with completion_provider_from_settings() as client:  # model discovered via /models
            from synthorg.llm import ChatMessage

            assert client.complete([ChatMessage(role="user", content="x")]).content == "hi"


@pytest.mark.django_db
@pytest.mark.parametrize("url", [*SSRF_FORMS, *SCHEME_FORMS])
def test_a_tenant_embedder_url_is_refused_at_config_write(settings, url):
    settings.SYNTHORG_OUTBOUND_ALLOW = ""
    company = CompanyFactory()
    data = {"memory": {"embedder": {"model": "m", "dims": 384, "base_url": url}}}
    with pytest.raises(InvalidInputError) as caught:
        company_config_set(company=company, data=data)
    [error] = caught.value.errors
    assert error["field"] == "memory.embedder.base_url"
    expected = SSRF_FORMS.get(url) or SCHEME_FORMS[url]
    assert error["message"].startswith(expected)
    company.refresh_from_db()
    assert (company.config, company.config_revision) == ({}, 1)


@pytest.mark.django_db
def test_an_allow_listed_tenant_embedder_url_is_accepted(settings):
    settings.SYNTHORG_OUTBOUND_ALLOW = "10.0.0.0/8"
    company = CompanyFactory()
    data = {"memory": {"embedder": {"model": "m", "dims": 384, "base_url": "http://10.1.1.1/v1"}}}
    company_config_set(company=company, data=data)
    company.refresh_from_db()
    assert company.config["memory"]["embedder"]["base_url"] == "http://10.1.1.1/v1"


def test_verifying_transports_share_one_ssl_context_and_an_unverified_one_does_not():
    """Loading the CA bundle once per process, not once per client (one per LLM call)."""
    first, second = GuardedTransport(), GuardedTransport()
    assert first._pool._ssl_context is second._pool._ssl_context
    assert first._pool._ssl_context.verify_mode == ssl.CERT_REQUIRED
    unverified = GuardedTransport(verify=False)._pool._ssl_context
    assert unverified is not first._pool._ssl_context
    assert unverified.verify_mode == ssl.CERT_NONE
