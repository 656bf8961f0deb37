"""One reader per platform (billing.platforms.base.PlatformReader)."""

from ..models import Platform
from . import chargebee, dodo, lemonsqueezy, paddle, polar
from .base import PlatformReader

READERS: dict[str, PlatformReader] = {
    Platform.PADDLE: paddle.reader,
    Platform.LEMONSQUEEZY: lemonsqueezy.reader,
    Platform.POLAR: polar.reader,
    Platform.DODO: dodo.reader,
    Platform.CHARGEBEE: chargebee.reader,
}


def reader_for(platform: str) -> PlatformReader:
    return READERS[platform]
