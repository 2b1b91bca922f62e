"""The per-company monthly budget, stored as the setting ``budget`` / ``monthly_limit``.

Value: ``{"amount": "250.00", "currency": "USD", "alert_threshold": "0.8"}``. Pure: no Django.
"""

from __future__ import annotations

from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field, field_validator

BUDGET_NAMESPACE = "budget"
BUDGET_KEY = "monthly_limit"


class MonthlyBudget(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    amount: Decimal = Field(gt=0, max_digits=24, decimal_places=10)
    currency: str = "USD"
    alert_threshold: Decimal = Field(default=Decimal("0.8"), gt=0, le=1)

    @field_validator("currency")
    @classmethod
    def _iso_currency(cls, value: str) -> str:
        code = value.strip().upper()
        if len(code) != 3 or not code.isascii() or not code.isalpha():
            raise ValueError("must be a three-letter ISO 4217 code such as 'USD'")
        return code


# Settings whose value has a schema; the others are free-form JSON.
SETTING_SCHEMAS: dict[tuple[str, str], type[BaseModel]] = {
    (BUDGET_NAMESPACE, BUDGET_KEY): MonthlyBudget,
}
