"""boto3 against obstore on the same S3 server: 100 MiB multipart put (one
part at a time, and obstore with 4 at once), streamed get, a 1,001-key
listing, with the client's and the server's CPU for each (docs/object-storage.md,
"Why boto3"). obstore is not a dependency of the project: run it in a venv of
its own, against a running embedded SeaweedFS (the tests' by default):

    uv venv /tmp/obsvenv && uv pip install --python /tmp/obsvenv/bin/python obstore==0.12.1 boto3==1.44.5
    /tmp/obsvenv/bin/python bench/s3_clients.py --home .groundwork-test/seaweedfs --port 8343
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import resource
import time
from collections.abc import Callable
from pathlib import Path

import boto3
from botocore.config import Config


def main() -> None:
    import obstore
    from obstore.store import S3Store

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, default=Path(".groundwork-test/seaweedfs"))
    parser.add_argument("--port", type=int, default=8343)
    parser.add_argument("--bucket", default="groundwork-test")
    args = parser.parse_args()
    cred = json.loads((args.home / "s3-credentials.json").read_text())
    weed = int((args.home / "weed.pid").read_text())
    endpoint = f"http://127.0.0.1:{args.port}"
    B = args.bucket
    data_path = Path("/tmp/s3_clients.bin")
    if not data_path.exists():
        data_path.write_bytes(os.urandom(100 * 1024 * 1024))

    def weed_cpu() -> float:
        f = Path(f"/proc/{weed}/stat").read_text().split(")")[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def me_cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    boto = boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=cred["access_key_id"],
        aws_secret_access_key=cred["secret_access_key"],
        config=Config(
            signature_version="s3v4",
            s3={"addressing_style": "path", "payload_signing_enabled": False},
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        ),
    )
    obs = S3Store(
        B,
        endpoint=endpoint,
        region="us-east-1",
        access_key_id=cred["access_key_id"],
        secret_access_key=cred["secret_access_key"],
        virtual_hosted_style_request=False,
        client_options={"allow_http": True},
    )
    P = 8 * 1024 * 1024

    def boto_put(key: str) -> None:
        up = boto.create_multipart_upload(Bucket=B, Key=key, ChecksumAlgorithm="SHA256")["UploadId"]
        parts = []
        with data_path.open("rb") as f:
            n = 1
            while body := f.read(P):
                d = base64.b64encode(hashlib.sha256(body).digest()).decode()
                r = boto.upload_part(
                    Bucket=B, Key=key, UploadId=up, PartNumber=n, Body=body, ChecksumSHA256=d
                )
                parts.append({"PartNumber": n, "ETag": r["ETag"], "ChecksumSHA256": d})
                n += 1
        boto.complete_multipart_upload(
            Bucket=B, Key=key, UploadId=up, MultipartUpload={"Parts": parts}
        )

    def obs_put(key: str, conc: int) -> None:
        with data_path.open("rb") as f:
            obstore.put(obs, key, f, chunk_size=P, max_concurrency=conc)

    def boto_get(key: str) -> int:
        return sum(len(c) for c in boto.get_object(Bucket=B, Key=key)["Body"].iter_chunks(1 << 20))

    def obs_get(key: str) -> int:
        return sum(len(c) for c in obstore.get(obs, key).stream(min_chunk_size=1 << 20))

    def boto_list(prefix: str) -> int:
        return sum(
            len(p.get("Contents", []))
            for p in boto.get_paginator("list_objects_v2").paginate(Bucket=B, Prefix=prefix)
        )

    def obs_list(prefix: str) -> int:
        return sum(len(b) for b in obstore.list(obs, prefix=prefix))

    def measure(name: str, fn: Callable[..., object], *a: object) -> object:
        c0, w0, t0 = me_cpu(), weed_cpu(), time.monotonic()
        out = fn(*a)
        t, c, w = time.monotonic() - t0, me_cpu() - c0, weed_cpu() - w0
        print(
            f"{name:28s} {t:6.2f} s wall  client CPU {c:5.2f} s  server CPU {w:5.2f} s"
            + (f"  ({100 / t:.1f} MiB/s)" if "put" in name or "get" in name else "")
        )
        return out

    pre = f"clientbench-{os.urandom(3).hex()}/"
    for round_ in range(2):
        measure("boto3 put 100 MiB (sha256)", boto_put, pre + f"b{round_}")
        measure("obstore put 100 MiB (c=1)", obs_put, pre + f"o{round_}", 1)
        measure("obstore put 100 MiB (c=4)", obs_put, pre + f"o4{round_}", 4)
        measure("boto3 get 100 MiB", boto_get, pre + f"b{round_}")
        measure("obstore get 100 MiB", obs_get, pre + f"o{round_}")
    for i in range(1001):
        boto.put_object(Bucket=B, Key=f"{pre}many/{i:05d}", Body=b"x")
    print(
        "listed",
        measure("boto3 list 1,001", boto_list, pre + "many/"),
        measure("obstore list 1,001", obs_list, pre + "many/"),
    )
    # cleanup
    keys = [
        o["Key"]
        for p in boto.get_paginator("list_objects_v2").paginate(Bucket=B, Prefix=pre)
        for o in p.get("Contents", [])
    ]
    for i in range(0, len(keys), 500):
        boto.delete_objects(Bucket=B, Delete={"Objects": [{"Key": k} for k in keys[i : i + 500]]})


if __name__ == "__main__":
    main()
