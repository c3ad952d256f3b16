"""Reads an ONVIF device's motion messages with onvif-zeep-async's PullPoint
manager, as Home Assistant's onvif integration does (create_pullpoint_manager,
set_synchronization_point, PullMessages on its service, shutdown): the
independent check of the device stand-in's Event service. Prints one JSON
line, {"messages": [[topic, item name, item value], ...]}, once it has read
three messages or 30 s have passed.

Usage: zeep_pullpoint.py HOST PORT USER PASSWORD
"""

import asyncio
import datetime as dt
import json
import sys

from onvif import ONVIFCamera

WANTED = 3


async def main():
    host, port, user, password = sys.argv[1:5]
    camera = ONVIFCamera(host, int(port), user, password, no_cache=True)
    await camera.update_xaddrs()
    lost = []
    manager = await camera.create_pullpoint_manager(
        dt.timedelta(seconds=60), lambda: lost.append(True)
    )
    await manager.set_synchronization_point()
    service = manager.get_service()
    messages = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while len(messages) < WANTED and loop.time() < deadline:
        response = await service.PullMessages(
            {"MessageLimit": 100, "Timeout": dt.timedelta(seconds=5)}
        )
        for message in response.NotificationMessage or []:
            topic = message.Topic._value_1
            item = message.Message._value_1.Data.SimpleItem[0]
            messages.append([topic, item.Name, item.Value])
    await manager.shutdown()
    await camera.close()
    print(json.dumps({"messages": messages, "lost": bool(lost)}))


asyncio.run(main())
