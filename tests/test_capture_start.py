"""What a capture reads as it starts: the checkout's commit, read from its files as `git rev-parse HEAD` finds it
(running git was 8 ms of a ~40 ms warm start; the start's figures are bench 12's, `python -m bench --only startup`)."""

import subprocess

import pytest

from ttreport.capturing import session


def git(cwd, *args) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd,
                          check=True, capture_output=True, text=True, timeout=60).stdout.strip()


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.delenv("GIT_DIR", raising=False)
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "a.txt").write_text("a")
    git(path, "add", "a.txt")
    git(path, "commit", "-q", "-m", "first")
    (path / "sub").mkdir()
    return path


LAYOUTS = {
    "a branch's loose ref": lambda repo: repo,
    "a packed ref": lambda repo: (git(repo, "pack-refs", "--all"), repo)[1],
    "a detached HEAD": lambda repo: (git(repo, "checkout", "-q", "--detach"), repo)[1],
    "a worktree (a .git file and a common dir)": lambda repo: (git(repo, "worktree", "add", "-q", "-b", "side",
                                                                   str(repo.parent / "wt")), repo.parent / "wt")[1],
    "a folder inside the checkout": lambda repo: repo / "sub",
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_the_commit_is_the_one_git_rev_parse_names(repo, monkeypatch, layout):
    where = LAYOUTS[layout](repo)
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")  # HEAD moves on after the layout is made
    monkeypatch.chdir(where)
    assert session._git_commit() == {"git_commit": git(where, "rev-parse", "HEAD")}


def test_no_commit_is_recorded_outside_a_checkout_or_on_an_unborn_branch(tmp_path, monkeypatch):
    monkeypatch.delenv("GIT_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    if subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, timeout=60).returncode == 0:
        pytest.skip("the temporary folder is itself inside a git checkout")
    assert session._git_commit() == {}
    git(tmp_path, "init", "-q")
    assert session._git_commit() == {}
