"""Python client for hitl-bridge's HTTP API: push approval requests and questions to
people in any chat the bridge serves, and get their answers back.

    from hitl_bridge_client import HitlClient, Target

    with HitlClient("http://127.0.0.1:8790", token="demo-token") as hitl:
        approval = hitl.request_approval(
            [{"name": "run_migration", "args": {"database": "orders"}}],
            targets=[Target.console()],
        )
        if approval.approved:
            ...
"""

from ._version import __version__
from .body import CommonFields, action_requests_body, approval_body, choices_body, questions_body
from .client import DEFAULT_BASE_URL, MAX_SERVER_WAIT, AsyncHitlClient, HitlClient
from .errors import HitlApiError, HitlError, RequestCancelled, RequestExpired, WaitTimeout
from .signature import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign, verify_signature
from .types import (
    Action,
    Answers,
    Approval,
    ApproveDecision,
    DecidedBy,
    Decision,
    EditDecision,
    EditedAction,
    EscalationStep,
    Policy,
    Question,
    QuestionOption,
    RejectDecision,
    RequestState,
    RespondDecision,
    ReviewConfig,
    Status,
    Target,
    TargetLike,
    Vote,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "MAX_SERVER_WAIT",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "Action",
    "Answers",
    "Approval",
    "ApproveDecision",
    "AsyncHitlClient",
    "CommonFields",
    "DecidedBy",
    "Decision",
    "EditDecision",
    "EditedAction",
    "EscalationStep",
    "HitlApiError",
    "HitlClient",
    "HitlError",
    "Policy",
    "Question",
    "QuestionOption",
    "RejectDecision",
    "RequestCancelled",
    "RequestExpired",
    "RequestState",
    "RespondDecision",
    "ReviewConfig",
    "Status",
    "Target",
    "TargetLike",
    "Vote",
    "WaitTimeout",
    "__version__",
    "action_requests_body",
    "approval_body",
    "choices_body",
    "questions_body",
    "sign",
    "verify_signature",
]
