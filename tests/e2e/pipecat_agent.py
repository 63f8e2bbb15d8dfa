"""A real pipecat pipeline (pipecat-ai 1.14, unchanged) with pipecat's own tracing, for
tests/e2e/test_traces.py: mock STT, LLM and TTS services (pipecat ships none; these apply
pipecat's own `traced_stt` / `traced_llm` / `traced_tts` decorators, as its provider
services do), an output transport that plays audio in real time (so that pipecat's turn
tracker sees the bot start and stop speaking), and a driver that speaks `turns` user turns.
Every turn gives pipecat's `turn` span with `stt`, `llm` and `tts` spans under it, under the
`conversation` span that carries `conversation.id`.

    setup_tracing("bot", exporter=OTLPSpanExporter())    # pipecat's own, once per process
    asyncio.run(run_conversation("call-1", turns=3))
"""
import asyncio

from pipecat.frames.frames import (
    InputAudioRawFrame, LLMContextFrame, LLMFullResponseEndFrame, LLMFullResponseStartFrame,
    TranscriptionFrame, TTSAudioRawFrame, UserStartedSpeakingFrame, UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame,
)
from pipecat.metrics.metrics import LLMTokenUsage
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair, LLMUserAggregatorParams,
)
from pipecat.services.llm_service import LLMService
from pipecat.services.settings import LLMSettings, STTSettings, TTSSettings
from pipecat.services.stt_service import STTService
from pipecat.services.tts_service import TTSService
from pipecat.transcriptions.language import Language
from pipecat.transports.base_output import BaseOutputTransport
from pipecat.transports.base_transport import TransportParams
from pipecat.turns.user_turn_strategies import ExternalUserTurnStrategies
from pipecat.utils.time import time_now_iso8601
from pipecat.utils.tracing.service_decorators import traced_llm, traced_stt, traced_tts
from pipecat.workers.runner import WorkerRunner


class MockSTTService(STTService):
    def __init__(self, transcripts, **kw):
        super().__init__(settings=STTSettings(model="mock-stt", language=Language.EN), **kw)
        self._transcripts = list(transcripts)

    @traced_stt                       # installs the push_frame span hooks on this class
    async def run_stt(self, audio: bytes):
        yield None                    # transcript is emitted on VAD stop instead

    def can_generate_metrics(self) -> bool:
        return True

    async def process_frame(self, frame, direction):
        await super().process_frame(frame, direction)
        if isinstance(frame, VADUserStoppedSpeakingFrame) and self._transcripts:
            await asyncio.sleep(0.05)
            await self.push_frame(TranscriptionFrame(self._transcripts.pop(0), "user-1",
                                                     time_now_iso8601(), finalized=True))

class MockLLMService(LLMService):
    def __init__(self, reply="Hello there. How can I help?", **kw):
        super().__init__(settings=LLMSettings(
            model="mock-llm", system_instruction=None, temperature=None, max_tokens=None,
            top_p=None, top_k=None, frequency_penalty=None, presence_penalty=None, seed=None,
            filter_incomplete_user_turns=False, user_turn_completion_config=None,
            use_provider_thinking_default=False), **kw)
        self._reply = reply

    def can_generate_metrics(self) -> bool:
        return True

    async def process_frame(self, frame, direction):
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMContextFrame):
            await self.push_frame(LLMFullResponseStartFrame())
            await self.start_processing_metrics()
            await self._process_context(frame.context)
            await self.stop_processing_metrics()
            await self.push_frame(LLMFullResponseEndFrame())
        else:
            await self.push_frame(frame, direction)

    @traced_llm
    async def _process_context(self, context):
        await self.start_ttfb_metrics()
        await asyncio.sleep(0.05)
        await self.stop_ttfb_metrics()
        for tok in self._reply.split(" "):
            await self._push_llm_text(tok + " ")
        await self.start_llm_usage_metrics(LLMTokenUsage(prompt_tokens=12, completion_tokens=6, total_tokens=18))

class MockTTSService(TTSService):
    def __init__(self, **kw):
        super().__init__(push_start_frame=True, push_stop_frames=True, stop_frame_timeout_s=0.3,
                         settings=TTSSettings(model="mock-tts", voice="mock-voice", language=Language.EN), **kw)

    def can_generate_metrics(self) -> bool:
        return True

    @traced_tts
    async def run_tts(self, text: str, context_id: str):
        await self.start_tts_usage_metrics(text)
        await asyncio.sleep(0.03)
        await self.stop_ttfb_metrics()
        yield TTSAudioRawFrame(audio=b"\x00\x00" * int(self.sample_rate * 0.1),
                               sample_rate=self.sample_rate, num_channels=1, context_id=context_id)

class NullOutputTransport(BaseOutputTransport):
    """Real BaseOutputTransport (emits BotStarted/StoppedSpeakingFrame) that 'plays' audio in real time."""
    def __init__(self):
        super().__init__(TransportParams(audio_out_enabled=True))
    async def start(self, frame):
        await super().start(frame)
        await self.set_transport_ready(frame)
    async def write_audio_frame(self, frame) -> bool:
        await asyncio.sleep(len(frame.audio) / (2 * frame.num_channels * frame.sample_rate))
        return True

def turn_frames():
    """What a transport and its VAD push for one user turn."""
    return [VADUserStartedSpeakingFrame(start_secs=0.2), UserStartedSpeakingFrame(),
            InputAudioRawFrame(audio=b"\x00\x00" * 1600, sample_rate=16000, num_channels=1),
            VADUserStoppedSpeakingFrame(stop_secs=0.2), UserStoppedSpeakingFrame()]

async def run_conversation(conversation_id, n_turns=3):
    """One conversation of `n_turns` user turns, traced by pipecat as `conversation_id`."""
    context = LLMContext(messages=[{"role": "system", "content": "You are a test bot."}])
    aggs = LLMContextAggregatorPair(context, user_params=LLMUserAggregatorParams(
        user_turn_strategies=ExternalUserTurnStrategies()))
    pipeline = Pipeline([MockSTTService([f"user says {i}" for i in range(1, n_turns + 1)]),
                         aggs.user(), MockLLMService(), MockTTSService(), NullOutputTransport(), aggs.assistant()])
    worker = PipelineWorker(pipeline, params=PipelineParams(enable_metrics=True, enable_usage_metrics=True),
                            enable_tracing=True, conversation_id=conversation_id,
                            cancel_on_idle_timeout=False)
    started = asyncio.Event()

    @worker.event_handler("on_pipeline_started")
    async def _started(w, f):
        started.set()

    async def drive():
        await asyncio.wait_for(started.wait(), 5)
        for _ in range(n_turns):
            for fr in turn_frames():
                await worker.queue_frame(fr)
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.0)  # the LLM, TTS and playback of the reply
        # pipecat ends a turn 2.5 s after the bot stops speaking (an EndFrame before that
        # marks the last turn interrupted).
        await asyncio.sleep(2.7)
        await worker.stop_when_done()
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await asyncio.gather(runner.run(), drive())
