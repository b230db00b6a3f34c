"""The size-capped rotating log writer: rotation, the header in every file, the number of old
files kept, flushing, concurrent writers."""

from __future__ import annotations

import csv
import threading

import pytest

from phil_description.core.capped_log import CappedCsvLog, CappedTextLog, rotated_path

COLUMNS = ('t', 'writer', 'seq', 'text')


def rows_of(path):
    with path.open(newline='', encoding='utf-8') as file:
        return list(csv.reader(file))


def log_files(folder):
    return sorted(path.name for path in folder.iterdir())


def test_a_full_log_is_rotated_and_every_file_starts_with_the_header(tmp_path):
    path = tmp_path / 'log.csv'
    log = CappedCsvLog(path, COLUMNS, max_bytes=1000, keep=1)
    written = [[f'{index:.1f}', 0, index, 'x' * 20] for index in range(200)]
    for row in written:
        log.writerow(row)
    log.close()
    assert log.rotations > 1
    assert log_files(tmp_path) == ['log.csv', 'log.csv.1']
    old, new = rows_of(rotated_path(path, 1)), rows_of(path)
    assert old[0] == new[0] == list(COLUMNS)
    assert path.stat().st_size <= 1000 and rotated_path(path, 1).stat().st_size <= 1000
    kept = old[1:] + new[1:]  # the newest rows, in order, none cut
    assert kept == [[str(cell) for cell in row] for row in written[-len(kept) :]]
    assert path.stat().st_size + rotated_path(path, 1).stat().st_size > 1000


@pytest.mark.parametrize('keep', [0, 1, 3])
def test_keep_old_files_and_drop_older_ones(tmp_path, keep):
    path = tmp_path / 'log.csv'
    with CappedCsvLog(path, COLUMNS, max_bytes=300, keep=keep) as log:
        for index in range(100):
            log.writerow([index, 0, index, 'y' * 10])
    assert log_files(tmp_path) == ['log.csv'] + [f'log.csv.{i}' for i in range(1, keep + 1)]
    firsts = [int(rows_of(rotated_path(path, i))[1][0]) for i in range(keep, 0, -1)]
    firsts.append(int(rows_of(path)[1][0]))
    assert firsts == sorted(firsts)  # .3 older than .2 older than .1 older than now
    assert int(rows_of(path)[-1][0]) == 99


def test_every_row_is_on_disk_at_once_and_writes_after_close_are_ignored(tmp_path):
    path = tmp_path / 'log.csv'
    log = CappedCsvLog(path, COLUMNS)
    log.writerow([1.5, 2, 3, 'a,b "quoted"'])
    assert rows_of(path) == [list(COLUMNS), ['1.5', '2', '3', 'a,b "quoted"']]
    log.close()
    log.writerow([9, 9, 9, 'late'])
    log.close()
    assert len(rows_of(path)) == 2


def test_a_batch_larger_than_the_cap_goes_whole_into_a_file_of_its_own(tmp_path):
    path = tmp_path / 'log.csv'
    with CappedCsvLog(path, COLUMNS, max_bytes=200, keep=2) as log:
        log.writerow([0, 0, 0, 'first'])
        log.writerows([[1, 0, index, 'z' * 30] for index in range(20)])
        log.writerow([2, 0, 0, 'after'])
    batch = rows_of(rotated_path(path, 1))
    assert batch[0] == list(COLUMNS) and len(batch) == 21
    assert rows_of(rotated_path(path, 2))[1][3] == 'first'
    assert rows_of(path)[1][3] == 'after'


def test_opening_starts_afresh_and_removes_old_rotations(tmp_path):
    path = tmp_path / 'run.log'
    with CappedTextLog(path, max_bytes=50, keep=2) as log:
        for index in range(20):
            log.write(f'line {index}\n')
    assert log_files(tmp_path) == ['run.log', 'run.log.1', 'run.log.2']
    with CappedTextLog(path, max_bytes=50, keep=2) as log:
        log.write('new run\n')
    assert log_files(tmp_path) == ['run.log']
    assert path.read_text() == 'new run\n'


def test_text_log_without_header_and_without_per_write_flush(tmp_path):
    path = tmp_path / 'node.log'
    log = CappedTextLog(path, max_bytes=64, keep=1, flush=False)
    log.write('starting\n')
    log.flush()
    assert path.read_text() == 'starting\n'
    for index in range(10):
        log.write(f'message {index}\n')
    log.close()
    text = rotated_path(path, 1).read_text() + path.read_text()
    assert text.endswith('message 9\n') and len(path.read_bytes()) <= 64


def test_concurrent_writers_never_mix_or_lose_rows(tmp_path):
    path = tmp_path / 'log.csv'
    writers, per_writer = 8, 400
    log = CappedCsvLog(path, COLUMNS, max_bytes=4000, keep=1000)
    start = threading.Barrier(writers)

    def write(writer: int) -> None:
        start.wait()
        for seq in range(per_writer):
            if seq % 10:
                log.writerow([0, writer, seq, f'w{writer}-{seq}'])
            else:
                log.writerows([[0, writer, seq, f'w{writer}-{seq}']])

    threads = [threading.Thread(target=write, args=(index,)) for index in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30.0)
    log.close()
    assert log.rotations > 10
    files = [rotated_path(path, i) for i in range(log.rotations, 0, -1)] + [path]
    rows = []
    for file in files:
        content = rows_of(file)
        assert content[0] == list(COLUMNS)
        rows += content[1:]
    assert len(rows) == writers * per_writer
    for writer in range(writers):
        mine = [row for row in rows if row[1] == str(writer)]
        assert [(row[2], row[3]) for row in mine] == [
            (str(seq), f'w{writer}-{seq}') for seq in range(per_writer)
        ]


def test_invalid_arguments(tmp_path):
    with pytest.raises(ValueError, match='max_bytes'):
        CappedCsvLog(tmp_path / 'a.csv', COLUMNS, max_bytes=5)
    with pytest.raises(ValueError, match='keep'):
        CappedTextLog(tmp_path / 'b.log', keep=-1)
