"""Loopback HTTP receivers for pacerd's deliveries, standard library only.

Webhook: records every POST (path, headers, JSON body) and answers as it is
told (a list of statuses to give first, then 200).

GitHubFake: a fake of GitHub's REST API for issues (the real one cannot be
reached from here), holding every request to the checks of GitHub's
documentation: POST /repos/{owner}/{repo}/issues with a JSON body whose
"title" is a non-empty string, "body" a string and "labels" an array of
strings, answered 201 with the new issue's "number" and "html_url"; POST
/repos/{owner}/{repo}/issues/{number}/comments with a string "body", for an
issue that exists, answered 201; every request with "Authorization: Bearer
TOKEN", "Accept: application/vnd.github+json", "X-GitHub-Api-Version:
2022-11-28", a User-Agent (GitHub refuses requests without one) and
"Content-Type: application/json". Anything else is answered as GitHub does
(401, 404, 415, 422) and recorded as a violation.
"""
import http.server
import json
import re
import threading


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # a client gone mid-request (pacerd killed by a test) is no news


class _Base:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n)
                status, body = outer.handle("POST", self.path, self.headers, raw)
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 503:
                    self.send_header("Retry-After", "1")
                self.end_headers()
                self.wfile.write(data)

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Webhook(_Base):
    def __init__(self, fail_first=()):
        self.fail = list(fail_first)
        super().__init__()
        self.url = "http://127.0.0.1:%d/hook" % self.port

    def handle(self, method, path, headers, raw):
        with self.lock:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            status = self.fail.pop(0) if self.fail else 200
            self.requests.append({"path": path, "headers": dict(headers), "body": body, "status": status})
            return status, {"ok": status == 200}

    def set_failures(self, statuses):
        with self.lock:
            self.fail = list(statuses)

    def delivered(self):
        """The POSTs answered 200, as (event, idempotency key, issue id)."""
        with self.lock:
            return [(r["body"]["event"], r["headers"].get("Idempotency-Key"), r["body"]["issue"]["id"])
                    for r in self.requests if r["status"] == 200]


class GitHubFake(_Base):
    def __init__(self, token, owner="team", repo="app"):
        self.token = token
        self.owner, self.repo = owner, repo
        self.issues = {}      # number -> {"title", "body", "labels", "comments": [...]}
        self.violations = []  # what a request did wrong
        super().__init__()
        self.url = "http://127.0.0.1:%d/repos/%s/%s" % (self.port, owner, repo)

    def _refuse(self, why, status, message):
        self.violations.append(why)
        return status, {"message": message, "documentation_url": "https://docs.github.com/rest"}

    def handle(self, method, path, headers, raw):
        with self.lock:
            self.requests.append({"method": method, "path": path, "headers": dict(headers), "raw": raw})
            if headers.get("Authorization") != "Bearer " + self.token:
                return self._refuse("Authorization", 401, "Bad credentials")
            if not headers.get("User-Agent"):
                return self._refuse("User-Agent", 403, "Request forbidden by administrative rules.")
            if headers.get("Accept") != "application/vnd.github+json":
                return self._refuse("Accept", 415, "Unsupported 'Accept' header")
            if headers.get("X-GitHub-Api-Version") != "2022-11-28":
                return self._refuse("X-GitHub-Api-Version", 400, "Invalid API version")
            if not (headers.get("Content-Type") or "").startswith("application/json"):
                return self._refuse("Content-Type", 415, "Unsupported media type")
            try:
                body = json.loads(raw)
            except ValueError:
                return self._refuse("JSON", 400, "Problems parsing JSON")
            base = "/repos/%s/%s/issues" % (self.owner, self.repo)
            if path == base:
                if not isinstance(body.get("title"), str) or not body["title"]:
                    return self._refuse("title", 422, "Validation Failed")
                if not isinstance(body.get("body", ""), str):
                    return self._refuse("body", 422, "Validation Failed")
                labels = body.get("labels", [])
                if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
                    return self._refuse("labels", 422, "Validation Failed")
                extra = set(body) - {"title", "body", "labels", "assignees", "milestone"}
                if extra:
                    return self._refuse("members %s" % sorted(extra), 422, "Validation Failed")
                number = len(self.issues) + 1
                self.issues[number] = {"title": body["title"], "body": body.get("body", ""), "labels": labels,
                                       "comments": []}
                return 201, {"number": number, "state": "open", "title": body["title"],
                             "html_url": "https://github.com/%s/%s/issues/%d" % (self.owner, self.repo, number),
                             "url": "https://api.github.com%s/%d" % (base, number)}
            m = re.fullmatch(re.escape(base) + r"/(\d+)/comments", path)
            if m:
                number = int(m.group(1))
                if number not in self.issues:
                    return self._refuse("comment on issue %d that does not exist" % number, 404, "Not Found")
                if not isinstance(body.get("body"), str) or not body["body"] or set(body) != {"body"}:
                    return self._refuse("comment body", 422, "Validation Failed")
                self.issues[number]["comments"].append(body["body"])
                return 201, {"id": len(self.requests), "body": body["body"]}
            return self._refuse("path %s" % path, 404, "Not Found")
