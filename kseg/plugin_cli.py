"""``kseg plugins``: register, list and check plugin codecs (placeholder until the registry lands)."""

import click


@click.group()
def plugins() -> None:
    """Plugin codecs (KIP-984): codec id 5 with a plugin id in the batch attributes."""
