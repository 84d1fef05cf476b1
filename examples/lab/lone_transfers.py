"""Time lone parameter-sized transfers between two lab hosts: how much a single flow varies.

The MLP's pattern on one persistent connection: pull 10 MB from the "PS", wait 10 ms, push
10 MB back, 40 times; the first 5 of each are dropped. Prints mean, CV, min and max.

    sudo sgdsim lab up --hosts 2 --bandwidth 100Mbit/s
    sudo ip netns exec sgdsim-h0 python examples/lab/lone_transfers.py server &
    sudo ip netns exec sgdsim-h1 python examples/lab/lone_transfers.py client 10.77.0.1
    sudo sgdsim lab down
"""
import socket, sys, time, statistics
M = 10_000_000
buf = bytearray(1 << 16)
def recv_n(c, n):
    while n > 0:
        k = c.recv_into(buf, min(n, len(buf))); n -= k
        if k == 0: raise EOFError
if sys.argv[1:2] != ["server"] and (len(sys.argv) != 3 or sys.argv[1] != "client"):
    print("usage: lone_transfers.py server | client SERVER_ADDRESS", file=sys.stderr)
    sys.exit(2)
if sys.argv[1] == "server":
    s = socket.create_server(("0.0.0.0", 45555)); c, _ = s.accept()
    payload = bytes(M)
    while True:
        try:
            recv_n(c, 1); c.sendall(payload)       # pull
            recv_n(c, M); c.sendall(b"k")          # push + ack
        except (EOFError, OSError):
            break
else:
    try:
        c = socket.create_connection((sys.argv[2], 45555))
    except OSError as exc:
        print(f"lone_transfers.py: cannot reach the server at {sys.argv[2]}: {exc.strerror or exc}", file=sys.stderr)
        sys.exit(2)
    pulls, pushes = [], []
    payload = bytes(M)
    for i in range(40):
        t = time.perf_counter(); c.sendall(b"p"); recv_n(c, M); pulls.append(time.perf_counter() - t)
        time.sleep(0.01)
        t = time.perf_counter(); c.sendall(payload); recv_n(c, 1); pushes.append(time.perf_counter() - t)
    for name, x in (("pull", pulls[5:]), ("push", pushes[5:])):
        print(name, f"mean {statistics.mean(x)*1e3:.1f} ms  cv {statistics.stdev(x)/statistics.mean(x):.3f}  min {min(x)*1e3:.0f} max {max(x)*1e3:.0f}")
