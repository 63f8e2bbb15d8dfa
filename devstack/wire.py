"""What a signed AWS request is, from its HTTP shape alone: the service it is for and, for
S3's path-style REST requests, the operation. Shared by the fault layer (devstack.faults)
and the IAM check (devstack.iam), so neither imports the other for it."""
import re

_SIGV4_SERVICE = re.compile(r"Credential=[^/]+/[^/]+/[^/]+/([^/]+)/")


def service_of(environ):
    """The service a SigV4-signed request is for (`dynamodb`, `s3`, ...)."""
    m = _SIGV4_SERVICE.search(environ.get("HTTP_AUTHORIZATION", ""))
    return m.group(1) if m else ""


def s3_operation(environ):
    """The S3 operation of a path-style request, by its method, key and query."""
    method = environ["REQUEST_METHOD"]
    path = environ.get("PATH_INFO", "").lstrip("/")
    query = environ.get("QUERY_STRING", "")
    has_key = "/" in path and path.split("/", 1)[1] != ""
    if not has_key:
        return {"PUT": "CreateBucket", "DELETE": "DeleteBucket", "HEAD": "HeadBucket"}.get(
            method, "DeleteObjects" if "delete" in query else "ListObjectsV2")
    if method == "PUT":
        if "HTTP_X_AMZ_COPY_SOURCE" in environ:
            return "CopyObject"
        return "UploadPart" if "partNumber=" in query else "PutObject"
    if method == "POST":
        return "CompleteMultipartUpload" if "uploadId=" in query else "CreateMultipartUpload"
    return {"GET": "GetObject", "HEAD": "HeadObject", "DELETE": "DeleteObject"}.get(method, method)
