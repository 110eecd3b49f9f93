"""An asyncio program that spends most of its time waiting: a few slow
"requests" fetched concurrently, a retry with back-off, and a bit of CPU
work. Under `lprof --wall` (Python 3.12+) the wait(s) column says which await
each second of waiting went to; the line that runs the event loop only says
that the loop was idle."""
import asyncio
import random


async def fetch(url, latency):
    await asyncio.sleep(latency)  # the "network"
    return f"{url}: ok"


async def fetch_with_retry(url):
    for attempt in range(3):
        if random.random() < 0.5 and attempt < 2:
            await asyncio.sleep(0.05 * 2 ** attempt)  # back-off before a retry
            continue
        return await fetch(url, 0.1)


def checksum(pages):
    return sum(sum(map(ord, p)) for p in pages * 20000)


async def main():
    random.seed(1)
    pages = await asyncio.gather(*(fetch(f"/item/{i}", 0.1 + 0.02 * i) for i in range(10)))
    more = await asyncio.gather(*(fetch_with_retry(f"/retry/{i}") for i in range(5)))
    print(len(pages + more), "pages, checksum", checksum(pages))


if __name__ == "__main__":
    asyncio.run(main())
