from .conftest import Rpc, msg03, msg10


async def test_doc_request_creates_completed_task(rpc: Rpc) -> None:
    rpc.path = "/a2a"
    r = await rpc("message/send", {"message": {"role": "user", "parts": [{"text": "Analyze this data"}]}})
    task = r["result"]
    assert task["kind"] == "task" and task["status"]["state"] == "completed"
    got = await rpc("tasks/get", {"id": task["id"]})
    assert got["result"]["status"]["state"] == "completed"
    c = await rpc("tasks/cancel", {"id": task["id"]})
    assert c["error"]["code"] == -32002
    assert c["error"]["message"] == "Task not cancelable: already completed"
    r10 = await rpc("SendMessage", msg10("hi"), v1=True)
    assert r10["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert msg03  # used by other modules
