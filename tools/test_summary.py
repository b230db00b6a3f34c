"""Summarise the JUnit reports colcon test wrote: a table per package, the failures, a total.

Exit status 1 when a test failed or errored, or when no test ran at all.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def summarise(build_dir: Path) -> int:
    reports = sorted(build_dir.glob('*/pytest.xml'))
    totals = {'passed': 0, 'failed': 0, 'skipped': 0}
    failures: list[str] = []
    print('\n== test summary ==')
    print(f'{"package":<20}{"passed":>8}{"failed":>8}{"skipped":>9}{"time s":>9}')
    for report in reports:
        package = report.parent.name
        counts = {'passed': 0, 'failed': 0, 'skipped': 0}
        seconds = 0.0
        for case in ET.parse(report).getroot().iter('testcase'):
            seconds += float(case.get('time', 0) or 0)
            problem = case.find('failure')
            if problem is None:
                problem = case.find('error')
            if problem is not None:
                counts['failed'] += 1
                name = f'{package}: {case.get("classname")}.{case.get("name")}'
                first_line = (problem.get('message') or '').strip().splitlines()[:1]
                failures.append(f'  {name}\n      {first_line[0] if first_line else ""}')
            elif case.find('skipped') is not None:
                counts['skipped'] += 1
            else:
                counts['passed'] += 1
        for key in totals:
            totals[key] += counts[key]
        print(
            f'{package:<20}{counts["passed"]:>8}{counts["failed"]:>8}{counts["skipped"]:>9}'
            f'{seconds:>9.1f}'
        )
    if failures:
        print('\nfailed:')
        print('\n'.join(failures))
    if not reports:
        print('no test reports found: did colcon test run?')
    print(f'\n{totals["passed"]} passed, {totals["failed"]} failed, {totals["skipped"]} skipped')
    ran = totals['passed'] + totals['failed'] > 0
    return 0 if ran and totals['failed'] == 0 else 1


if __name__ == '__main__':
    sys.exit(summarise(Path(sys.argv[1] if len(sys.argv) > 1 else 'build')))
