"""The GitHub Actions workflows (.github/workflows): valid, and doing what the project needs.

``book.yml`` builds the book with ``make book`` and deploys it to GitHub Pages (the address of
``html.baseurl``, where every link of the notebook editions points) on every push to main;
``tests.yml`` runs ``make test`` on every pull request. The files are validated against the
GitHub workflow schema that check-jsonschema ships (offline; the ``test`` extra installs it).
That every absolute link of the editions resolves to a page and anchor of the built book is
tests/browser/test_edition_links.py.
"""
import pathlib
import shutil
import subprocess
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"


def _load(name):
    return yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf8"))


def _on(workflow):
    # YAML 1.1 reads the key `on` as True.
    return workflow.get("on", workflow.get(True))


def _steps(workflow):
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def test_workflows_match_githubs_schema():
    exe = pathlib.Path(sys.executable).with_name("check-jsonschema")
    command = [str(exe) if exe.exists() else shutil.which("check-jsonschema") or "check-jsonschema",
               "--builtin-schema", "vendor.github-workflows", *map(str, sorted(WORKFLOWS.glob("*.yml")))]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_book_is_built_and_deployed_to_pages_on_every_push_to_main():
    wf = _load("book.yml")
    assert _on(wf)["push"]["branches"] == ["main"]
    assert wf["permissions"]["pages"] == "write" and wf["permissions"]["id-token"] == "write"
    steps = _steps(wf)
    runs = [s.get("run", "") for s in steps]
    assert any(r.startswith("make book") for r in runs)
    uses = [s.get("uses", "").split("@")[0] for s in steps]
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == "_build/html"
    assert "actions/deploy-pages" in uses
    assert wf["jobs"]["deploy"]["needs"] == "build"


def test_pull_requests_run_make_test():
    wf = _load("tests.yml")
    assert "pull_request" in _on(wf)
    assert any(s.get("run", "").startswith("make test") for s in _steps(wf))


def test_the_pages_address_is_the_online_books():
    """Pages serves https://OWNER.github.io/REPO/ for repository.url https://github.com/OWNER/REPO:
    html.baseurl must be that address, or the editions' links go nowhere."""
    from rnnlab.book.maintenance import config_value, repository_url

    owner, repo = repository_url(ROOT).rstrip("/").split("/")[-2:]
    assert config_value(ROOT, "html", "baseurl").rstrip("/") + "/" == f"https://{owner.lower()}.github.io/{repo}/"
