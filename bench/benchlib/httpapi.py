"""symd's HTTP API as the bench drives it: requests, /v1/symbolicate bodies, /metrics."""
import http.client
import json
import os
import re

from benchlib.common import die, read_json

LOAD_ADDRESS = 0x104A38000  # where the bench pretends the image was loaded


def connect(url):
    m = re.match(r"^http://([^:/]+):(\d+)", url)
    if not m:
        die(f"bad url {url}")
    return http.client.HTTPConnection(m.group(1), int(m.group(2)), timeout=120)


def post(conn, path, body, ctype):
    conn.request("POST", path, body=body, headers={"Content-Type": ctype})
    r = conn.getresponse()
    return r.status, r.read()


def get(conn, path):
    conn.request("GET", path)
    r = conn.getresponse()
    return r.status, r.read()


def read_metrics(url):
    """The unlabeled series of GET /metrics, as {name: float}."""
    conn = connect(url)
    status, body = get(conn, "/metrics")
    conn.close()
    if status != 200:
        die(f"/metrics answered {status}")
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#") and "{" not in line:
            k, _, v = line.partition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


def symbolicate_body(uuid, arch, vmaddrs, text_vmaddr, adjust=None):
    """A /v1/symbolicate request: one image at LOAD_ADDRESS, one thread of
    the file addresses vmaddrs (slid)."""
    slide = LOAD_ADDRESS - text_vmaddr
    frames = [{"address": "0x%x" % (v + slide)} for v in vmaddrs]
    doc = {"images": [{"uuid": uuid, "arch": arch, "load_address": "0x%x" % LOAD_ADDRESS}],
           "threads": [{"id": 0, "frames": frames}]}
    if adjust:
        # The DWARF bench: addresses are looked up as given, as
        # llvm-symbolizer does, not as return addresses.
        doc["adjust"] = adjust
    return json.dumps(doc, separators=(",", ":")).encode()


def image_of(upload_result, arch):
    """(uuid, text vmaddr) of the ARCH image of an upload result file."""
    for i in read_json(upload_result)["images"]:
        if i["arch"] == arch:
            return i["uuid"], int(i["text_vmaddr"], 16)
    die(f"no {arch} slice was uploaded")


def uuid_str(b):
    h = b.hex().upper()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def write_body(d, i, data):
    """Request body I of directory D as bench/bodies.lua reads it (body-NNN)."""
    with open(os.path.join(d, "body-%03d" % i), "wb") as f:
        f.write(data)
