from typedspy.retry._feedback import FEEDBACK_LABEL as FEEDBACK_LABEL
from typedspy.retry._feedback import feedback_messages, feedback_text
from typedspy.retry._policy import AttemptSlot, RetryableFailure, RetryPolicy

__all__ = ["AttemptSlot", "RetryPolicy", "RetryableFailure", "feedback_messages", "feedback_text"]
