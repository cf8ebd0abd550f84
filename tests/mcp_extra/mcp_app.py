"""Tools served by the MCP tests, in process and as ``python -m typedspy.mcp mcp_app:tools``."""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel

import typedspy as ts


class Cat(BaseModel):
    lives: int


class Dog(BaseModel):
    tricks: list[str]


class LookUpPet(ts.Signature):
    """Look up a pet by its name."""

    pet_name: str = ts.InputField(description="the pet's name")
    limit: int = ts.InputField(default=3, ge=1)
    pet: Cat | Dog = ts.OutputField()
    owner: str = ts.OutputField()


class PetLookup(ts.Module):
    """Code-backed: Rex is a dog, every other pet a cat."""

    signature = LookUpPet

    async def aforward(self, pet_name: str, limit: int = 3) -> dict[str, Any]:
        if pet_name == "Rex":
            return {"pet": Dog(tricks=["sit", "roll", "fetch", "beg"][:limit]), "owner": "Ann"}
        return {"pet": Cat(lives=9), "owner": "Bo"}


class Count(BaseModel):
    total: int


@ts.tool
def broken_count(word: str) -> Count:
    """A tool whose implementation returns the wrong shape."""
    return {"total": "many"}  # type: ignore[return-value]


@ts.confirm_first(question="Delete {path}?")
@ts.tool
def delete_file(path: str) -> str:
    """Delete a file (pretend)."""
    return f"deleted {path}"


@ts.tool
def server_pid() -> int:
    """The serving process's id."""
    return os.getpid()


tools = [PetLookup(), broken_count, delete_file, server_pid]


class Overpromise(ts.Tool):
    """A tool whose listed outputSchema promises more than it returns (a misbehaving server)."""

    def to_mcp_tool(self) -> dict[str, Any]:
        listed = super().to_mcp_tool()
        listed["outputSchema"]["properties"]["result"]["maximum"] = 10
        return listed


@ts.tool
def roll_dice(sides: int) -> int:
    """Roll a die."""
    return sides * 7


tools.append(Overpromise(roll_dice.signature, roll_dice.impl, name="roll_dice"))

dice = ts.mcp.serve(roll_dice, name="dice")  # a server already built: served as it is
