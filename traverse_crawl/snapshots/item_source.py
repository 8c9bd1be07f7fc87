"""The ``sourceRef`` field of a user's items: set through ``itemadapter``, once per item.

Any item ``itemadapter.ItemAdapter`` takes (a dict, a ``scrapy.Item``, a dataclass, an
attrs object) gets the ref in the field named by ``TRAVERSE_ITEM_SOURCE_FIELD``, unless it
has one already; a class that cannot take the field is left alone, with one warning per
class naming the field to declare.
"""

from __future__ import annotations

import logging
from typing import Any

from itemadapter import ItemAdapter

logger = logging.getLogger(__name__)


class SourceRefField:
    def __init__(self, field: str) -> None:
        self.field = field
        self.warned: set[type] = set()

    def set(self, item: Any, ref: str) -> None:
        try:
            adapter = ItemAdapter(item)
        except TypeError:
            return  # not an item: the pipelines decide what it is
        try:
            if adapter.get(self.field):
                return
            adapter[self.field] = ref
        except (KeyError, AttributeError, TypeError):  # no such field, or a frozen item
            cls = type(item)
            if cls not in self.warned:
                self.warned.add(cls)
                logger.warning(
                    "items of class %s.%s cannot take the field %r: declare it to give "
                    "each item the sourceRef of its response (TRAVERSE_ITEM_SOURCE_FIELD)",
                    cls.__module__,
                    cls.__qualname__,
                    self.field,
                )
