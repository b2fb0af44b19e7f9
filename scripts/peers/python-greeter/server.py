"""A default grpcio server of helloworld.Greeter and api.Users on grpc.aio (grpc's asyncio example,
as users write it).

Usage: python server.py --addr 127.0.0.1:0 (prints "listening on ADDR" on stderr once ready).
The stubs are generated from proto/helloworld/helloworld.proto and proto/api/users.proto by grpc_tools at start-up, into a
temporary directory, so nothing generated is committed.
"""

import asyncio
import os
import sys
import tempfile

from grpc_tools import protoc

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
OUT = tempfile.mkdtemp(prefix="volley-py-greeter-")
rc = protoc.main(["protoc", f"-I{os.path.join(ROOT, 'proto')}", f"--python_out={OUT}",
                  f"--grpc_python_out={OUT}", "helloworld/helloworld.proto", "api/users.proto"])
if rc != 0:
    sys.exit("python-greeter: protoc failed")
sys.path.insert(0, OUT)

import grpc  # noqa: E402
from api import users_pb2, users_pb2_grpc  # noqa: E402
from helloworld import helloworld_pb2, helloworld_pb2_grpc  # noqa: E402


class Greeter(helloworld_pb2_grpc.GreeterServicer):
    async def SayHello(self, request, context):
        return helloworld_pb2.HelloReply(message="Hello " + request.name)


class Users(users_pb2_grpc.UsersServicer):
    async def Get(self, request, context):
        return users_pb2.User(id=request.id, email="dmitry.k@test.tld", name="Dmitry K.", rating=228.53)

    async def List(self, request, context):
        for i in range(10):
            yield users_pb2.User(id=i, email=f"user{i}@test", name=f"User {i}", rating=i * 1.53)


async def main():
    addr = sys.argv[sys.argv.index("--addr") + 1] if "--addr" in sys.argv else "127.0.0.1:0"
    server = grpc.aio.server()
    helloworld_pb2_grpc.add_GreeterServicer_to_server(Greeter(), server)
    users_pb2_grpc.add_UsersServicer_to_server(Users(), server)
    port = server.add_insecure_port(addr)
    await server.start()
    print(f"listening on {addr.rsplit(':', 1)[0]}:{port}", file=sys.stderr, flush=True)
    await server.wait_for_termination()


asyncio.run(main())
