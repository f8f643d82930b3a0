"""`sgl-scan rules [ID]`: list the rules, or show one rule's documentation."""

from __future__ import annotations

import json

import click

from sgl_scan.errors import ConfigError


@click.command("rules")
@click.argument("rule_id", required=False, metavar="[ID]")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def command(rule_id: str | None, fmt: str) -> None:
    """List the rules with their docs; `sgl-scan rules SGL301` (or its name) shows one.

    \b
      sgl-scan rules
      sgl-scan rules d2t-used-as-direct-map
      sgl-scan rules --format json
    """
    from sgl_scan.rules.registry import load_rules

    rules = load_rules()
    docs = rules.docs()
    if rule_id is not None:
        rule = rules.get(rule_id)
        if rule is None:
            raise ConfigError(f"no rule {rule_id!r} (known: {', '.join(rules.ids())})")
        docs = (rule.doc(),)
    if fmt == "json":
        payload = [
            {"id": d.id, "name": d.name, "severity": d.severity, "message": d.message, "docs": d.docs} for d in docs
        ]
        click.echo(json.dumps(payload[0] if rule_id else payload, indent=2))
        return
    if rule_id is not None:
        doc = docs[0]
        click.echo(f"{doc.id} {doc.name} ({doc.severity})\n{doc.message}\n\n{doc.docs}")
        return
    width = max(len(d.name) for d in docs)
    for doc in docs:
        click.echo(f"{doc.id}  {doc.name:<{width}}  {doc.severity:<7}  {doc.message}")
    click.echo("\nsgl-scan rules ID shows a rule's documentation.")
