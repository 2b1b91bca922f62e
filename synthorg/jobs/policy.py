"""The one retry policy of durable jobs: a doubling back-off with a bound on attempts.

Pure (no Django import): a :class:`RetryPolicy` answers how long to wait before the next
attempt and whether a job has had its last one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

#: 2**30 × any base exceeds every sensible ``max_delay``; beyond it timedelta could overflow.
_MAX_DOUBLINGS = 30


@dataclass(frozen=True)
class RetryPolicy:
    """Wait ``base``, ``factor × base``, ``factor² × base`` … (at most ``max_delay``) between
    attempts; after ``max_attempts`` attempts the job gives up (an operator may re-queue it)."""

    base: timedelta = timedelta(minutes=1)
    max_delay: timedelta = timedelta(hours=1)
    max_attempts: int = 8
    factor: int = 2

    def delay(self, attempts: int) -> timedelta:
        """The wait before attempt ``attempts + 1`` (any count: the growth is bounded before
        it could overflow)."""
        return min(
            self.base * (self.factor ** min(max(attempts - 1, 0), _MAX_DOUBLINGS)), self.max_delay
        )

    def gives_up(self, attempts: int) -> bool:
        return attempts >= self.max_attempts

    def next_attempt(self, attempts: int, now: datetime) -> datetime | None:
        """When attempt ``attempts + 1`` is due; ``None`` once the job has given up."""
        return None if self.gives_up(attempts) else now + self.delay(attempts)


#: 1, 2, 4 … minutes, at most an hour, at most 8 attempts (lesson captures, evolver drafts).
DEFAULT_POLICY = RetryPolicy()
