"""Reading a pack's files safely (agents_app.packs.archive): .tar.gz and .zip uploads and pack
directories give the same files; links, paths out of the pack, bombs and floods of files are
refused with the entry named, before anything is inflated; build_archive is deterministic."""

from __future__ import annotations

import gzip
import io
import os
import stat
import subprocess
import tarfile
import zipfile

import pytest

from agents_app.packs.archive import (
    MAX_PACK_BYTES,
    MAX_PACK_FILES,
    build_archive,
    read_archive,
    read_directory,
)
from agents_app.packs.contents import PackError
from tests.support.packs import archive_of, write_pack


def tar_gz(entries: list[tuple[tarfile.TarInfo, bytes | None]], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=fmt) as tar:
        for info, content in entries:
            tar.addfile(info, io.BytesIO(content) if content is not None else None)
    return buffer.getvalue()


def member(name: str, content: bytes = b"x", kind: bytes = tarfile.REGTYPE, **fields) -> tuple:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = len(content) if kind == tarfile.REGTYPE else 0
    for key, value in fields.items():
        setattr(info, key, value)
    return info, content if kind == tarfile.REGTYPE else None


def zip_of(entries: dict[str, bytes], modes: dict[str, int] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in entries.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (modes or {}).get(name, stat.S_IFREG | 0o644) << 16
            archive.writestr(info, content)
    return buffer.getvalue()


@pytest.fixture
def pack(tmp_path):
    return write_pack(tmp_path / "ops-extras", files={"README.md": "# Ops extras\n"})


def test_a_tar_gz_made_by_tar_reads_like_the_directory_with_its_top_folder_stripped(tmp_path, pack):
    archive = tmp_path / "ops-extras.tgz"
    subprocess.run(["tar", "czf", str(archive), "ops-extras/"], cwd=tmp_path, check=True)

    files = read_archive(archive.read_bytes(), "ops-extras.tgz")

    assert dict(files) == dict(read_directory(pack))
    assert "pack.yaml" in files and "skills/pack-runbook/checklist.md" in files


def test_a_tar_gz_of_the_folder_contents_reads_too(tmp_path, pack):
    archive = tmp_path / "flat.tar.gz"
    subprocess.run(["tar", "czf", str(archive), "-C", str(pack), "."], check=True)

    assert dict(read_archive(archive.read_bytes())) == dict(read_directory(pack))


def test_a_zip_reads_like_the_directory_wrapped_or_not(pack):
    files = dict(read_directory(pack))

    assert dict(read_archive(zip_of(files), "pack.zip")) == files
    wrapped = {f"ops-extras/{path}": content for path, content in files.items()}
    assert dict(read_archive(zip_of(wrapped), "pack.zip")) == files


def test_a_top_folder_is_kept_when_pack_yaml_is_not_inside_it():
    files = read_archive(zip_of({"docs/README.md": b"x", "docs/LICENSE": b"y"}))
    assert set(files) == {"docs/README.md", "docs/LICENSE"}


def test_build_archive_gives_the_same_bytes_for_the_same_files(pack):
    first = archive_of(pack)
    for path in pack.rglob("*"):
        os.utime(path, (1_000_000, 1_000_000))  # other times, same contents
    files = dict(read_directory(pack))
    reordered = dict(reversed(list(files.items())))

    assert archive_of(pack) == first
    assert build_archive(reordered) == first
    assert dict(read_archive(first)) == files
    with tarfile.open(fileobj=io.BytesIO(first)) as tar:
        infos = tar.getmembers()
    assert [info.name for info in infos] == sorted(files)
    assert {(info.mtime, info.uid, info.gid, info.mode, info.uname) for info in infos} == {
        (0, 0, 0, 0o644, "")
    }
    assert gzip.decompress(first)  # a plain gzip stream
    assert first[4:8] == b"\x00\x00\x00\x00"  # gzip header mtime 0


def test_non_ascii_names_round_trip(pack):
    files = {**read_directory(pack), "docs/café.md": "crème".encode()}
    assert dict(read_archive(build_archive(files))) == files
    assert dict(read_archive(zip_of(files))) == files


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (member("pack/link.md", kind=tarfile.SYMTYPE, linkname="/etc/passwd"), "'pack/link.md' is a link"),
        (member("pack/hard.md", kind=tarfile.LNKTYPE, linkname="pack/pack.yaml"), "'pack/hard.md' is a link"),
        (
            member("pack/tty", kind=tarfile.CHRTYPE, devmajor=5, devminor=0),
            "'pack/tty' is a device or special",
        ),
        (member("pack/fifo", kind=tarfile.FIFOTYPE), "'pack/fifo' is a device or special"),
        (member("../escape.md"), r"\.\./escape\.md: '\.\.' in a path is not allowed"),
        (member("pack/../../escape.md"), "'..' in a path is not allowed"),
        (member("/etc/cron.d/evil"), "/etc/cron.d/evil: absolute paths are not allowed"),
        (member("pack\\agents\\x.md"), "must not contain backslashes"),
    ],
)
def test_unsafe_tar_entries_are_refused_by_name(entry, message):
    data = tar_gz([member("pack/pack.yaml", b"name: x\n"), entry])

    with pytest.raises(PackError, match=message):
        read_archive(data, "evil.tgz")


def test_a_duplicate_path_is_refused():
    data = tar_gz([member("pack.yaml"), member("agents/a.md"), member("./agents/a.md")])
    with pytest.raises(PackError, match="agents/a.md appears twice in dup.tgz"):
        read_archive(data, "dup.tgz")


def test_a_symlink_in_a_zip_is_refused():
    data = zip_of(
        {"pack.yaml": b"name: x\n", "agents/a.md": b"/etc/passwd"}, {"agents/a.md": stat.S_IFLNK | 0o777}
    )
    with pytest.raises(PackError, match="'agents/a.md' is a link"):
        read_archive(data, "evil.zip")


@pytest.mark.parametrize(
    ("name", "message"),
    [("../x.md", "'..' in a path"), ("/abs.md", "absolute paths"), ("a\\b.md", "backslashes")],
)
def test_unsafe_zip_names_are_refused(name, message):
    with pytest.raises(PackError, match=message):
        read_archive(zip_of({"pack.yaml": b"x", name: b"y"}))


def test_a_symlink_in_a_pack_directory_is_refused(pack, tmp_path):
    (tmp_path / "secret.txt").write_text("the host's secret")
    (pack / "agents" / "secret.md").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(PackError, match="agents/secret.md is a link"):
        read_directory(pack)


def test_a_symlinked_folder_in_a_pack_directory_is_refused(pack, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (pack / "skills" / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(PackError, match="skills/linked is a link"):
        read_directory(pack)


def test_a_git_folder_beside_the_pack_is_not_part_of_it(pack):
    (pack / ".git").mkdir()
    (pack / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert not any(path.startswith(".git") for path in read_directory(pack))


def test_a_header_announcing_a_huge_entry_is_refused_before_its_data_is_read():
    # The header says 100 GB; only 1 MB of data follows. A reader that inflated first would hit
    # the truncated stream; the size check must refuse the entry from its header alone.
    info = tarfile.TarInfo("pack/bomb.bin")
    info.size = 100 * 1024**3
    raw = member("pack/pack.yaml", b"name: x\n")[0].tobuf(tarfile.GNU_FORMAT) + b"name: x\n".ljust(512, b"\0")
    raw += info.tobuf(tarfile.GNU_FORMAT) + bytes(1024 * 1024)
    with pytest.raises(
        PackError, match=r"pack/bomb\.bin \(107374182400 bytes\) takes bomb\.tgz past the 5 MB"
    ):
        read_archive(gzip.compress(raw), "bomb.tgz")


def test_a_highly_compressible_tar_entry_is_refused_by_name():
    big = bytes(MAX_PACK_BYTES + 1)
    data = tar_gz([member("pack.yaml", b"name: x\n"), member("blob.bin", big)])
    assert len(data) < MAX_PACK_BYTES // 100  # a bomb: small upload, large unpacked

    with pytest.raises(PackError, match=r"blob\.bin \(5242881 bytes\) takes bomb\.tar\.gz past"):
        read_archive(data, "bomb.tar.gz")


def test_a_zip_bomb_is_refused_by_name():
    data = zip_of({"pack.yaml": b"name: x\n", "blob.bin": bytes(4 * MAX_PACK_BYTES)})
    assert len(data) < MAX_PACK_BYTES // 100

    with pytest.raises(PackError, match=r"blob\.bin \(20971520 bytes\) takes bomb\.zip past"):
        read_archive(data, "bomb.zip")


def test_many_files_that_together_pass_the_limit_are_refused():
    chunk = bytes(MAX_PACK_BYTES // 4)
    data = zip_of({"pack.yaml": b"x", **{f"f{index}.bin": chunk for index in range(5)}})
    with pytest.raises(PackError, match=r"f3\.bin \(1310720 bytes\) takes the archive past the 5 MB"):
        read_archive(data)


def test_a_huge_tar_header_record_stops_at_the_limit():
    # A pax record is read whole before the entry it describes: the gzip stream itself is capped.
    info, content = member("pack.yaml", b"x")
    info.pax_headers = {"comment": "a" * (2 * MAX_PACK_BYTES)}
    with pytest.raises(PackError, match="unpacks to more than the 5 MB"):
        read_archive(tar_gz([(info, content)]), "pax.tgz")


def test_too_many_files_are_refused():
    entries = {"pack.yaml": b"x", **{f"docs/{index}.md": b"" for index in range(MAX_PACK_FILES)}}
    with pytest.raises(PackError, match=f"more than {MAX_PACK_FILES} files"):
        read_archive(zip_of(entries), "many.zip")


def test_too_many_folders_are_refused():
    entries = [member(f"d{index}", kind=tarfile.DIRTYPE) for index in range(2 * MAX_PACK_FILES + 1)]
    with pytest.raises(PackError, match="more than 1000 entries"):
        read_archive(tar_gz(entries), "dirs.tgz")


def test_too_many_files_in_a_directory_are_refused(tmp_path):
    for index in range(MAX_PACK_FILES + 1):
        (tmp_path / f"{index}.md").write_text("")
    with pytest.raises(PackError, match=f"more than {MAX_PACK_FILES} files"):
        read_directory(tmp_path)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"name: x\n", "upload.bin is not a .tar.gz or .zip archive"),
        (b"", "upload.bin is not a .tar.gz or .zip archive"),
        (gzip.compress(b"not a tar file at all" * 40), "upload.bin is damaged or truncated"),
        (b"PK\x03\x04garbage", "upload.bin is damaged or truncated"),
    ],
)
def test_what_is_not_an_archive_says_so(data, message):
    with pytest.raises(PackError, match=message):
        read_archive(data, "upload.bin")


def test_a_truncated_tar_gz_is_refused(pack):
    data = archive_of(pack)
    with pytest.raises(PackError, match="damaged or truncated"):
        read_archive(data[: len(data) // 2], "cut.tgz")


def test_a_missing_directory_is_refused(tmp_path):
    with pytest.raises(PackError, match="is not a directory"):
        read_directory(tmp_path / "nowhere")
