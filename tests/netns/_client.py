"""A bulk client for the cross-host tests: submit runs concurrently, print their ends as JSON.

Run inside a namespace: ``python -m tests.netns._client ADDRESS MANIFEST_JSON RUNS``.
One process for many runs, where ``ontoflow submit --wait`` would start one per run.
"""

from __future__ import annotations

import json
import sys

import anyio
import msgspec

from ontoflow.protocols.client import Error, Status, Submit
from ontoflow.runtime.cli import open_client
from ontoflow.runtime.loop import run


async def main(address: str, manifest: dict, runs: int) -> list[dict]:
    async with open_client(address) as client:
        for _ in range(runs):
            client.send(Submit(manifest=manifest))
        ids: list[str] = []
        ends: list[dict] = []
        with anyio.fail_after(60):
            while len(ends) < runs:
                for reply in await client.recv_batch():
                    if isinstance(reply, Error):
                        raise SystemExit(f"refused: {reply.code}: {reply.message}")
                    if reply.__struct_config__.tag == "submit_accepted":
                        ids.append(reply.run_id)
                        client.send(Status(run_id=reply.run_id, wait=True))
                    else:
                        ends.append(msgspec.to_builtins(reply))
    return ends


if __name__ == "__main__":
    address, manifest_path, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(manifest_path) as fh:
        doc = json.load(fh)
    print(json.dumps(run(main, address, doc, runs)))
