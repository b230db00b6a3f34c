"""A play session: DRUM START, windows generated ahead on the wall clock, DRUM END.

Typical use by the score player (all times in seconds of one monotonic clock)::

    session = PlaySession(robot, play_list=play_list)
    send(session.start('rock', now_s=now, current_positions_rad=q, speed=1.0))
    every 50 ms: send(session.poll(now)); publish(session.due_hits(now))
    send(session.set_speed(1.5, now))                 # first chunk has replace=True
    point, chunks = session.pause(now); send(chunks)  # stops at a bar start, resume point
    send(session.stop(now))                           # DRUM END now (replace=True)
    send(session.hit('snare', now_s=now, current_positions_rad=q, velocity=5, hand='right'))

Every chunk starts with the point the previous one ended with (see `MotionChunk`). Windows are
generated while their start is less than one bar (at the current tempo and speed) plus
`extra_lookahead_s` ahead of `now`. Speed changes, pauses and stops cut the generated
motion at the first window boundary at least `margin_s` after `now`, regenerate from the state
saved there and mark the first new chunk `replace`. Score time and wall time are related by a
`ScoreClock`; a speed change starts at that boundary, so nothing jumps and no score time is lost.
A PAUSE ends the play at the first bar start at least 1.2 s of score time after the cut (so no
arm has started moving towards a note that will not be played) and returns the resume point.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import numpy as np

from phil_control.core.motion.validation import JointTable
from phil_control.core.play.base_generator import HIT_LOOKAHEAD_S
from phil_control.core.play.chunk import MotionChunk, SessionBusyError
from phil_control.core.play.common import WaistChooser
from phil_control.core.play.feasibility import check_feasible
from phil_control.core.play.playback import Playback
from phil_control.core.play.robot import PlayRobot
from phil_control.core.play.status import PlayStatus
from phil_control.core.play.timeline import (
    PlaySource,
    ResumePoint,
    folder_source,
    hit_source,
    resolve_source,
    with_velocity_delta,
)
from phil_control.core.score import PlayList, normalize_speed

# Drives follow within milliseconds; a larger lead would be a mistake, not a calibration.
MAX_MOTION_LEAD_S = 0.05


def check_motion_lead_s(value: float) -> None:
    """Raise ValueError naming ``motion_lead_s`` unless it is in [0, MAX_MOTION_LEAD_S] s."""
    if not (math.isfinite(value) and 0.0 <= value <= MAX_MOTION_LEAD_S):
        raise ValueError(f'motion_lead_s must be in [0, {MAX_MOTION_LEAD_S}] s, got {value}')


def check_pedal_lead_s(value: float) -> None:
    """Raise ValueError naming ``pedal_lead_s`` unless |value| <= MAX_MOTION_LEAD_S s."""
    if not (math.isfinite(value) and abs(value) <= MAX_MOTION_LEAD_S):
        raise ValueError(
            f'pedal_lead_s must be in [-{MAX_MOTION_LEAD_S}, {MAX_MOTION_LEAD_S}] s, got {value}'
        )


class PlaySession(PlayStatus):
    """Plays scores and single HITs; one play at a time, reusable afterwards. The queries
    (hits, clock, progress, end) are `PlayStatus`'s.

    Not thread-safe: call from one thread (the node's executor).

    Attributes:
        robot: Robot data.
        play_list: Play list for ids (None: only HITs can be played).
        margin_s: How far after `now` a new or replacing chunk may start, s (covers the time
            to deliver it to the trajectory generator).
        extra_lookahead_s: Generated motion reaches one bar plus this beyond `now`, s.
        resume_point: Saved by `pause`, cleared by `start` and `stop`.
        motion_lead_s: The motion runs this far ahead of the music (hits, audio, progress), so
            drives that follow their commands this late strike on time, s.
        pedal_lead_s: The pedals run this much further ahead, for pedal drives that follow
            later than the arm drives (negative: earlier), s.
        wrist_torque: Wrists in torque mode (CST) while playing; False keeps them in position.
        audio: Audio track of the current play ('' when silent or resumed).
    """

    def __init__(
        self,
        robot: PlayRobot,
        play_list: PlayList | None = None,
        margin_s: float = 0.1,
        extra_lookahead_s: float = 0.5,
        wrist_torque: bool = True,
        motion_lead_s: float = 0.0,
        pedal_lead_s: float = 0.0,
        joint_table: JointTable | None = None,
    ) -> None:
        """Set up; nothing moves until `start` or `hit`. ``joint_table``: the limits `check`
        holds a play to."""
        check_motion_lead_s(motion_lead_s)
        check_pedal_lead_s(pedal_lead_s)
        super().__init__()
        self.robot = robot
        self.wrist_torque = wrist_torque
        self.motion_lead_s = motion_lead_s
        self.pedal_lead_s = pedal_lead_s
        self.play_list = play_list
        self.joint_table = joint_table
        self.margin_s = margin_s
        self.extra_lookahead_s = extra_lookahead_s
        self.resume_point: ResumePoint | None = None
        self.audio = ''
        #: Added to every stroke's intensity (1..7 kept) from the next score read on.
        self.velocity_delta = 0
        self._chooser = WaistChooser(robot)
        self._sequences = itertools.count(1)  # chunk numbers, never repeated in a session

    # ----------------------------------------------------------------------------- commands
    def start(
        self,
        score: str,
        *,
        now_s: float,
        current_positions_rad: np.ndarray,
        speed: float = 1.0,
        start_bar: int = 0,
        improv: bool = False,
    ) -> list[MotionChunk]:
        """Begin playing a play-list id (PLAY; RESUME with `start_bar`).

        Args:
            score: Play-list id (a path is refused; nothing is opened for it), or the id of the
                saved resume point (a chained score that no entry names, see `ResumePoint`).
            now_s: Current wall time, s.
            current_positions_rad: (13,) last commanded pose (DRUM START starts there).
            speed: Initial speed, clamped to 0.5..2.0.
            start_bar: 0 for the whole score, else skip the rows of earlier bars.
            improv: Play the score's folder back to back until stopped or paused.

        Returns:
            DRUM START (from `now_s` + margin) and any windows already due.

        Raises:
            SessionBusyError: A play is still running at `now_s`.
            PlayListError: A path or an unknown id; the message lists the valid ids.
            ScoreError: Malformed score or one beyond the limits of `score.limits`.
            OSError: The score file cannot be read.
            SpeedError: `speed` is not a number.
            PlayAborted: The start pose cannot be reached (nothing moves).
        """
        self._ensure_idle(now_s)
        source = self._source(score, start_bar)
        self.resume_point = None
        chunks = self._begin(source, now_s, current_positions_rad, speed, improv)
        self.audio = '' if start_bar else source.audio
        return chunks

    def check(
        self,
        score: str,
        *,
        current_positions_rad: np.ndarray,
        speed: float = 1.0,
        start_bar: int = 0,
    ) -> None:
        """What `start` with these arguments would play, generated whole and checked
        (`core.play.feasibility`; the first score of an improv); nothing is sent. Takes about
        4 ms per second of music: call it before taking the start time.

        Raises:
            ScoreInfeasible: A row that cannot be played (its bar, line and beat named).
            PlayListError, ScoreError, OSError, SpeedError: As `start`.
            RuntimeError: The session has no joint table.
        """
        if self.joint_table is None:
            raise RuntimeError('PlaySession.check needs the joint_table')
        source = self._source(score, start_bar)
        if source.score.events:
            # The waist chooser only caches: sharing it warms it for the real play.
            dry = self._playback(source, 0.0, current_positions_rad, speed, False)
            check_feasible(dry, source, self.joint_table)

    def _source(self, score: str, start_bar: int) -> PlaySource:
        point = self.resume_point
        if point is not None and point.score_path is not None and score == point.play_id:
            source = folder_source(point.score_path, self.play_list, start_bar)
        else:
            source = resolve_source(score, self.play_list, start_bar)
        return with_velocity_delta(source, self.velocity_delta)

    def resume(
        self,
        point: ResumePoint,
        *,
        now_s: float,
        current_positions_rad: np.ndarray,
        speed: float = 1.0,
    ) -> list[MotionChunk]:
        """Continue a paused play from its bar, without audio (upstream RESUME)."""
        return self.start(
            point.play_id,
            now_s=now_s,
            current_positions_rad=current_positions_rad,
            speed=speed,
            start_bar=point.bar,
        )

    def hit(
        self,
        instrument: str,
        *,
        now_s: float,
        current_positions_rad: np.ndarray,
        velocity: int = 5,
        hand: str | None = None,
    ) -> list[MotionChunk]:
        """Strike one instrument once: DRUM START (sticks over the snare), strike, DRUM END.

        The strike lands 5.0 s after `now_s` + margin (4.0 s DRUM START + 1.0 s).

        Args:
            instrument: HIT name ('bass', 'snare', ..., 'open hihat').
            now_s: Current wall time, s.
            current_positions_rad: (13,) last commanded pose.
            velocity: Intensity 1..7.
            hand: 'right' / 'left' to override upstream's hand rule, None to keep it.

        Returns:
            Every chunk of the HIT; the strike is `commanded_hits[0]`.

        Raises:
            UnknownInstrumentError: Unknown name.
            ValueError: Bad velocity, or a hand given for the bass drum.
            SessionBusyError, PlayAborted: As `start` (an unreachable strike moves nothing).
        """
        self._ensure_idle(now_s)
        source = hit_source(instrument, velocity, hand)
        chunks = self._begin(source, now_s, current_positions_rad, 1.0, False)
        chunks += self._play.fill(math.inf, 0.0)
        if self._play.aborted is not None:
            aborted, self._play = self._play.aborted, None
            raise aborted
        self.audio = ''
        return chunks

    def poll(self, now_s: float) -> list[MotionChunk]:
        """Generate the windows (and finally DRUM END) that are due; call every few 10 ms."""
        if self._play is None or self._play.end is not None:
            return []
        return self._play.fill(now_s, self.extra_lookahead_s)

    def set_speed(self, speed: float, now_s: float) -> list[MotionChunk]:
        """Change the playback speed (clamped to 0.5..2.0) from the next window boundary.

        Returns:
            Regenerated chunks; the first one replaces queued motion.
        """
        speed = normalize_speed(speed, clamp=True)
        play = self._play
        if play is None or play.end is not None:
            return []
        play.cut(play.clock.score_at(now_s + self.margin_s))
        play.requested_speed = speed
        return play.fill(now_s, self.extra_lookahead_s, replace=True)

    def pause(self, now_s: float) -> tuple[ResumePoint | None, list[MotionChunk]]:
        """Stop at the next bar start (at least 1.2 s of score ahead) and save a resume point.

        Returns:
            The resume point (None when no bar start is left: the play just ends) and the
            regenerated chunks (the first one replaces queued motion).
        """
        play = self._play
        if play is None or play.end is not None:
            return None, []
        cut_s = play.cut(play.clock.score_at(now_s + self.margin_s))
        play.stop_improv()
        bar_start = play.timeline.bar_start_after(max(cut_s, 0.0) + HIT_LOOKAHEAD_S)
        if bar_start is not None:
            event = play.timeline.events[bar_start]
            source = play.timeline.source_of(bar_start)
            listed = self.play_list is not None and source.play_id in self.play_list
            self.resume_point = ResumePoint(
                source.play_id, event.bar, None if listed else source.score_path
            )
            play.timeline.end_silently_at(bar_start)
        return self.resume_point, play.fill(now_s, self.extra_lookahead_s, replace=True)

    def stop(self, now_s: float) -> list[MotionChunk]:
        """Abort now: DRUM END from the first window boundary after `now_s` + margin.

        Returns:
            The DRUM END chunks (the first replaces queued motion), or [] when not playing.
        """
        play = self._play
        if play is None or play.end is not None:
            return []
        self.resume_point = None
        cut_s = play.cut(play.clock.score_at(now_s + self.margin_s))
        if cut_s < 0.0:
            return play.finish_at(now_s + self.margin_s, replace=True)
        return play.finish_from_last(replace=True)

    def halted(self, stop_s: float) -> ResumePoint | None:
        """The robot stopped at `stop_s` without this session (the hardware latched, or a node
        of the motion path died): nothing after that instant was played. Forgets the play and,
        for a score, saves a resume point at the bar of the first hit not played.

        Returns:
            The resume point (None for a HIT, or when every hit had been played).
        """
        play = self._play
        self._play, self.resume_point = None, None
        if play is None:
            return None
        missed = next((hit for hit in play.hits if hit.command_time_s > stop_s), None)
        if missed is None or not missed.play_id:
            return None
        source = next((s for s in play.timeline.sources if s.play_id == missed.play_id), None)
        listed = self.play_list is not None and missed.play_id in self.play_list
        self.resume_point = ResumePoint(
            missed.play_id, missed.hit.bar, None if listed or source is None else source.score_path
        )
        return self.resume_point

    def discard(self) -> None:
        """Forget the current play or HIT without any more motion (its chunks were refused
        downstream, so nothing generated from here would join what the robot does)."""
        self._play = None
        self.resume_point = None

    # ----------------------------------------------------------------------------- internals
    def _ensure_idle(self, now_s: float) -> None:
        if not self.finished(now_s):
            raise SessionBusyError('a play is still running; stop it or wait for DRUM END')

    def _playback(
        self,
        source: PlaySource,
        start_s: float,
        current_positions_rad: np.ndarray,
        speed: float,
        improv: bool,
        sequences: Iterator[int] | None = None,
    ) -> Playback:
        """A playback of ``source`` with this session's settings (the real one, or `check`'s)."""
        return Playback(
            self.robot,
            source,
            start_s,
            current_positions_rad,
            speed,
            improv,
            self._chooser,
            self.wrist_torque,
            self.motion_lead_s,
            self.pedal_lead_s,
            self.play_list,
            sequences,
            self.velocity_delta,
        )

    def _begin(
        self,
        source: PlaySource,
        now_s: float,
        current_positions_rad: np.ndarray,
        speed: float,
        improv: bool,
    ) -> list[MotionChunk]:
        play = self._playback(
            source, now_s + self.margin_s, current_positions_rad, speed, improv, self._sequences
        )
        self._play, self._reported = play, 0
        return [*play.drum_start(), *play.fill(now_s, self.extra_lookahead_s)]
