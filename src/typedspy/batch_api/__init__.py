"""OpenAI Batch API files: a module's calls written as a JSONL request file, read back typed.

`write_batch_file` writes the exact requests the live calls would send; `read_batch_file` reads
the endpoint's output file back through the same checks, parsing and validation as a live call
(ADR-023). An integration on top of the call path: nothing on that path imports it.
"""

from typedspy.batch_api._files import aread_batch_file, read_batch_file, write_batch_file

__all__ = ["aread_batch_file", "read_batch_file", "write_batch_file"]
