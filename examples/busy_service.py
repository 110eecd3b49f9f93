"""A stand-in for a long-running service, to try `lprof attach` on (Python 3.14+).

    python3 examples/busy_service.py &            # prints its pid, runs for 10 minutes
    lprof attach <pid> -d 5                       # what it does, per line, for 5 s
    lprof attach <pid> --top                      # the same, live (Ctrl-C ends it)
    lprof attach <pid> -l -p __main__:handle -d 5 # every line of handle(), timed

Its main thread serves "requests" from a queue that two worker threads fill;
one request in ten takes the slow path."""
import json
import os
import queue
import sys
import threading
import time


def parse(raw):
    return json.loads(raw)


def slow_path(payload):
    total = 0
    for i in range(20000):
        total += (i * payload["n"]) % 7
    return total


def handle(raw):
    payload = parse(raw)
    if payload["n"] % 10 == 0:
        return slow_path(payload)
    return sum(range(payload["n"] % 500))


def producer(requests, start):
    n = start
    while True:
        requests.put(json.dumps({"n": n, "pad": "x" * 200}))
        n += 2
        time.sleep(0.0005)


def main(seconds):
    requests = queue.Queue(maxsize=1000)
    for start in (0, 1):
        threading.Thread(target=producer, args=(requests, start), daemon=True).start()
    end = time.time() + seconds
    served = 0
    while time.time() < end:
        handle(requests.get())
        served += 1
    return served


if __name__ == "__main__":
    print(f"busy_service: pid {os.getpid()}", flush=True)
    print(f"served {main(float(sys.argv[1]) if len(sys.argv) > 1 else 600)}")
