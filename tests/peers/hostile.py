"""A hostile MCP server over stdio, for the hardening tests (sim/tests/cli/call.rs). Stdlib only.

    python3 hostile.py flood N   answers tools/list after N responses to ids never issued, N notifications and N
                                 lines that are not JSON: a log flood, if the client logged each
    python3 hostile.py tools N   lists N small tools on one page (100,000 is about 11 MB: under the frame limit)
    python3 hostile.py pages N   lists N small tools on every page, for ever (each page under the frame limit)
"""

import json
import sys


def tool(i):
    return {"name": f"t{i}", "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}}


def main():
    mode, n = sys.argv[1], int(sys.argv[2])
    out = sys.stdout
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        method = msg.get("method")
        if method == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "hostile", "version": "1"}}
        elif method == "tools/list" and mode == "flood":
            junk = []
            for i in range(n):
                junk.append('{"jsonrpc":"2.0","id":%d,"result":{}}\n' % (10**9 + i))
                junk.append('{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n')
                junk.append("not json at all\n")
            out.write("".join(junk))
            result = {"tools": [tool(0)]}
        elif method == "tools/list" and mode == "tools":
            result = {"tools": [tool(i) for i in range(n)]}
        elif method == "tools/list" and mode == "pages":
            page = int(msg.get("params", {}).get("cursor", "0"))
            result = {"tools": [tool(page * n + i) for i in range(n)], "nextCursor": str(page + 1)}
        else:
            error = {"code": -32601, "message": "method not found"}
            out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": error}) + "\n")
            out.flush()
            continue
        out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
