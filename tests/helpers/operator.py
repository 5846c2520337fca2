"""The context tests write with when the writer is not what they test: the local operator."""

from portal.auth.identities import LOCAL_OPERATOR
from portal.machinery.admission import WriteContext

OPERATOR = WriteContext(user=LOCAL_OPERATOR)
