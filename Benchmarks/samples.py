"""The HealthKit-like sample every bulk measurement sends: `make bench`'s
bulk row (bulk_bench.py), `make bench-lan` (lan/client.py) and the bulk-500
instruction budget (instructions.sh). Standard library only."""
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
