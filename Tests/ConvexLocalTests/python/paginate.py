"""paginate feed:list: pages meet and the last is done, a live first page keeps its end, another query's cursor is
InvalidCursor."""
import convex
from common import client, expect_raises

c = client()
for i in range(7):
    c.mutation("feed:post", {"body": f"p{i}", "channel": "py"})


def bodies(result):
    return [post["body"] for post in result["page"]]


pages, cursor = [], None
while True:
    result = c.query("feed:list", {"channel": "py", "paginationOpts": {"numItems": 3, "cursor": cursor}})
    assert set(result) == {"page", "isDone", "continueCursor", "splitCursor", "pageStatus"}, result
    pages.append(bodies(result))
    cursor = result["continueCursor"]
    if result["isDone"]:
        break
assert pages == [["p6", "p5", "p4"], ["p3", "p2", "p1"], ["p0"]], pages

# A live first page: a new post lands on top and the page keeps its end (the deployment runs it with its journal).
live = iter(c.subscribe("feed:list", {"channel": "py", "paginationOpts": {"numItems": 2, "cursor": None}}))
first = next(live)
assert bodies(first) == ["p6", "p5"], first
c.mutation("feed:post", {"body": "p7", "channel": "py"})
second = next(live)
assert bodies(second) == ["p7", "p6", "p5"], second
assert second["continueCursor"] == first["continueCursor"]

# The feed's order changed: the old cursors belong to another query.
c.mutation("feed:setOrder", {"order": "oldest"})
e = expect_raises(
    lambda: c.query("feed:list", {"paginationOpts": {"numItems": 2, "cursor": first["continueCursor"]}}),
    convex.ConvexError, "InvalidCursor")
assert e.data == {"isConvexSystemError": True, "paginationError": "InvalidCursor"}, e.data
expect_raises(lambda: c.query("feed:list", {"paginationOpts": {"numItems": 2, "cursor": "no cursor"}}), Exception,
              "Failed to parse cursor")
print("OK")
