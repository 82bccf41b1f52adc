"""The agents a2ad ships: the echo agent, the demo agent (echo, plus a question and a
streamed artifact), and the LLM-backed task manager (a client of a2ad servers). What an
agent is (Agent, TaskContext) is defined in ``a2ad.agent``."""
