#!/usr/bin/env python3
"""One insert reaching a live paginated feed of 5 loaded pages, against one plain live query of the same list.

Seeds `feed:post` with POSTS posts, then opens, on one gateway, streams that each follow the newest 5 * PAGE posts of
`feed:list` / `feed:all` (newest first):

  pages        /subscribe?sub.p0=feed:list&args.p0=…  five pages, as client.js subscribes them: each page but the last
               pinned by `endCursor` (the next page's cursor), the last open-ended
  pages+patch  the same with delta=json-patch (client.js's default)
  all          /subscribe/feed:all?limit=<5 * PAGE>     one live query of the same posts
  all+patch    the same with delta=json-patch

For each of ROUNDS inserts (`feed:post`, which lands at the top of the first page; each is removed again before the
next, so every insert meets the same pages), it measures per stream the bytes read from the socket for that change
(chunk framing included) and the time from sending the mutation to the stream's event, and prints the medians. Streams are read one after another, so later streams' times include reading the earlier
ones: the order rotates each round.

Usage: paginated_feed.py PORT [POSTS] [PAGE] [ROUNDS]     (standard library only)
"""

import http.client
import json
import statistics
import sys
import time
import urllib.parse

from delta_bytes import RawStream, post


def main():
    port = int(sys.argv[1])
    posts = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    page = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    conn = http.client.HTTPConnection("127.0.0.1", port)
    for n in range(posts):
        post(conn, "/mutation/feed:post", {"body": f"post number {n}", "author": "bench"})

    # The cursors of five pages read one after another, as loadMore does.
    cursors = [None]
    for _ in range(5):
        result = post(conn, "/query/feed:list", {"paginationOpts": {"numItems": page, "cursor": cursors[-1]}})
        cursors.append(result["continueCursor"])
    params = []
    for i in range(5):
        opts = {"numItems": page, "cursor": cursors[i]}
        if i < 4:
            opts["endCursor"] = cursors[i + 1]
        params += [(f"sub.p{i}", "feed:list"), (f"args.p{i}", json.dumps({"paginationOpts": opts}))]
    pages_path = "/subscribe?" + urllib.parse.urlencode(params)
    paths = {
        "pages": pages_path,
        "pages+patch": pages_path + "&delta=json-patch",
        "all": f"/subscribe/feed:all?limit={5 * page}",
        "all+patch": f"/subscribe/feed:all?limit={5 * page}&delta=json-patch",
    }
    streams = {name: RawStream(port, path) for name, path in paths.items()}
    for name, stream in streams.items():
        stream.next_event()
        stream.take_bytes()

    sent_bytes = {name: [] for name in streams}
    latency = {name: [] for name in streams}
    names = list(streams)
    for round_ in range(rounds):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        started = time.monotonic()
        new_id = post(conn, "/mutation/feed:post", {"body": f"new post {round_}", "author": "bench"})
        for name in order:
            streams[name].next_event()
            latency[name].append((time.monotonic() - started) * 1000)
            sent_bytes[name].append(streams[name].take_bytes())
        # Removed again (not measured), so every insert meets the same pages.
        post(conn, "/mutation/feed:remove", {"id": new_id})
        for name in order:
            streams[name].next_event()
            streams[name].take_bytes()

    print(f"{posts} posts, 5 pages of {page} loaded ({5 * page} posts shown), {rounds} inserts on top of page 1")
    print(f"{'stream':<14}{'bytes/insert':>14}{'vs all':>9}{'ms to event':>13}")
    base = statistics.median(sent_bytes["all"])
    for name in names:
        b = statistics.median(sent_bytes[name])
        ms = statistics.median(latency[name])
        print(f"{name:<14}{b:>14.0f}{b / base:>9.2f}{ms:>13.2f}")


if __name__ == "__main__":
    main()
