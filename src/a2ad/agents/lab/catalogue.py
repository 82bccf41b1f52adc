"""The lab's small shop: what is in stock where, and what it costs.

Prices are Decimal euros before tax (HT); a discount tier ``(from_quantity,
percent)`` applies to a line of at least that many units, the highest that
fits. Fixed data: the lab's agents are deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

__all__ = ["CATALOGUE", "CURRENCY", "Item", "price"]

CURRENCY = "EUR"
CENT = Decimal("0.01")


@dataclass(frozen=True)
class Item:
    sku: str
    label: str
    stock: dict[str, int]  # warehouse → units
    unit_price: Decimal
    tiers: tuple[tuple[int, int], ...] = ()  # (from quantity, percent), ascending

    @property
    def total(self) -> int:
        return sum(self.stock.values())


CATALOGUE: dict[str, Item] = {
    item.sku: item
    for item in (
        Item(
            "CHAISE-ERGO",
            "chaise ergonomique",
            {"Lyon": 12, "Lille": 0},
            Decimal("189.00"),
            ((10, 10),),
        ),
        Item(
            "BUREAU-120",
            "bureau 120 cm",
            {"Lyon": 4, "Lille": 7},
            Decimal("349.00"),
            ((5, 5), (20, 12)),
        ),
        Item("LAMPE-LED", "lampe LED", {"Lyon": 40, "Lille": 25}, Decimal("39.90"), ((20, 15),)),
        Item("ECRAN-27", "écran 27 pouces", {"Lyon": 3, "Lille": 2}, Decimal("229.00"), ((5, 8),)),
        Item(
            "CAISSON-3T",
            "caisson 3 tiroirs",
            {"Lyon": 0, "Lille": 0},
            Decimal("129.00"),
            ((10, 10),),
        ),
    )
}


@dataclass(frozen=True)
class Price:
    sku: str
    quantity: int
    unit_price: Decimal
    discount_percent: int
    total: Decimal  # before tax, discount applied, rounded to the cent


def price(item: Item, quantity: int) -> Price:
    percent = 0
    for from_quantity, tier_percent in item.tiers:
        if quantity >= from_quantity:
            percent = tier_percent
    gross = item.unit_price * quantity
    total = (gross * (100 - percent) / 100).quantize(CENT, rounding=ROUND_HALF_UP)
    return Price(item.sku, quantity, item.unit_price, percent, total)
