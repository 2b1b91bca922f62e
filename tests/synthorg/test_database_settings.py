"""``DATABASE_URL`` / ``DATABASE_OWNER_URL``: which role the app and the migrations use."""

import pytest

from synthorg.database import DatabaseUnavailableError, database_owner_settings

APP = "postgresql://synthorg_app:app%20pw@db.internal:6543/synthorg?sslmode=require"


def test_owner_url_gives_the_owner_login_for_the_same_database(monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", APP)
    monkeypatch.setenv(
        "DATABASE_OWNER_URL",
        "postgresql://synthorg_owner:s3cret@db.internal:6543/synthorg?sslmode=verify-full",
    )
    assert database_owner_settings(tmp_path) == {
        "USER": "synthorg_owner",
        "PASSWORD": "s3cret",
        "OPTIONS": {"sslmode": "verify-full"},
    }


def test_without_an_owner_url_one_role_does_everything(monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", APP)
    monkeypatch.delenv("DATABASE_OWNER_URL", raising=False)
    assert database_owner_settings(tmp_path) is None
    monkeypatch.setenv("DATABASE_OWNER_URL", APP)  # the same role twice: nothing to switch
    assert database_owner_settings(tmp_path) is None


@pytest.mark.parametrize(
    "owner_url",
    [
        "postgresql://synthorg_owner:x@db.internal:6543/otherdb",
        "postgresql://synthorg_owner:x@elsewhere:6543/synthorg",
        "postgresql://synthorg_owner:x@db.internal:5432/synthorg",
    ],
)
def test_an_owner_url_for_another_database_is_refused(monkeypatch, tmp_path, owner_url):
    monkeypatch.setenv("DATABASE_URL", APP)
    monkeypatch.setenv("DATABASE_OWNER_URL", owner_url)
    with pytest.raises(DatabaseUnavailableError, match="same host, port and database"):
        database_owner_settings(tmp_path)
