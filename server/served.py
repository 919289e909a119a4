"""`ServedModel`: what every route knows about the one model a server serves, built once at
start (tokenizer, chat template, prompt encoder, tool-call format) and never mutated, so
routes may read it from any thread."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from exactserve.runtime.chat_template import ChatTemplate
from exactserve.runtime.gguf_file import open_gguf
from exactserve.runtime.prompt import ChatEncoder
from exactserve.runtime.speculative import SpeculativeConfig
from exactserve.runtime.tokenizer import Tokenizer
from exactserve.server.tools import ToolFormat
from exactserve.toolerr.forms import Options


@dataclass(frozen=True)
class ServedModel:
    """`name`: the id clients send as `model` (the alias, else the file name); requests
    naming another model get a 404. `toolerr`: the tool-error layer's server options."""

    name: str
    path: Path
    tokenizer: Tokenizer
    template: ChatTemplate
    encoder: ChatEncoder
    tool_format: ToolFormat
    context_length: int
    n_vocab: int
    backend: str
    toolerr: Options = field(default_factory=Options)
    speculative: SpeculativeConfig | None = None  # applied to every generation request
    created: int = field(default_factory=lambda: int(time.time()))

    @classmethod
    def load(
        cls,
        path: Path,
        *,
        context_length: int,
        backend: str,
        alias: str | None = None,
        template_file: Path | None = None,
        toolerr: Options | None = None,
        speculative: SpeculativeConfig | None = None,
    ) -> ServedModel:
        with open_gguf(path) as gguf:
            tokenizer = Tokenizer.from_gguf(gguf)
            arch = gguf.metadata.get("general.architecture", "")
            template = ChatTemplate.from_gguf(gguf, arch)
        if template_file is not None:
            template = ChatTemplate(
                Path(template_file).read_text(encoding="utf-8"),
                bos_token=template.bos_token,
                eos_token=template.eos_token,
                name=Path(template_file).name,
            )
        return cls(
            name=alias or Path(path).name,
            path=Path(path),
            tokenizer=tokenizer,
            template=template,
            encoder=ChatEncoder(template, tokenizer),
            tool_format=ToolFormat.for_template(template),
            context_length=context_length,
            n_vocab=tokenizer.vocab_size,
            backend=backend,
            toolerr=toolerr or Options(),
            speculative=speculative,
        )

    def accepts(self, model: object) -> bool:
        """Whether a request's `model` names this one: absent, the served name, or the file
        name (clients often send what they were configured with)."""
        return model is None or model in (self.name, self.path.name, str(self.path))
