"""The HealthKit-like sample every bulk measurement sends: `make bench`'s
bulk row (bulk_bench.py), `make bench-lan` (lan/client.py) and the bulk-500
instruction budget (instructions.sh); and a scan written into a watched
folder as the mirror's scanner writes it (watch_bench.py, engine_bench.py,
Tests/client/watch.py). Standard library only."""
import json
import os
import time
import uuid


def sample(i, run=0):
    """Sample `i` of upload `run`: a body-mass quantity sample with a UUID
    and a sync identifier, about 430 bytes of JSON."""
    start = 1_780_000_000 + i * 60
    return {
        "type": "HKQuantityTypeIdentifierBodyMass",
        "uuid": str(uuid.UUID(int=(run << 64) | i)).upper(),
        "syncIdentifier": f"mirror-1.scan.{run}.{i:06d}",
        "syncVersion": 1,
        "unit": "kg",
        "value": 71.3 + (i % 100) / 100,
        "startDate": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(start)),
        "endDate": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(start + 30)),
        "source": {"name": "Body Mirror", "bundleIdentifier": "com.example.bodymirror",
                   "productType": "Mirror1,1", "version": "3.2.1"},
        "metadata": {"HKWasUserEntered": False},
    }


def rename_in(folder, ident, body, clock=time.monotonic):
    """Writes `ident`.json into `folder` as a scanner does: a hidden part
    file, renamed in. Returns `clock()` just before the rename, the moment a
    watcher's freshness counts from (time.time to compare with another
    process's wall-clock stamps)."""
    part = os.path.join(folder, f".{ident}.json.part")
    with open(part, "w") as f:
        json.dump(body, f)
    renamed = clock()
    os.rename(part, os.path.join(folder, ident + ".json"))
    return renamed
