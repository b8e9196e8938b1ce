package completion_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/decomposition"
)

// Train a rank-2 CP model with biases on 1,200 random cells of a noiseless
// 15 x 12 x 10 rank-2 tensor.
func ExampleTrain() {
	st, _ := completion.UniformCP([]int{15, 12, 10}, 1200, 2, 0, rand.NewPCG(1, 2))
	m, _ := decomposition.NewModel(decomposition.CP, st.Dims, []int{2}, true)
	res, err := completion.Train(st, nil, m, &completion.Settings{Solver: completion.SolverSGD, Epochs: 100, Threads: 2, LearningRate: 0.02, Reg: 1e-4, InitScale: 0.5}, rand.NewPCG(3, 4), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	last := res.History[len(res.History)-1]
	first := res.History[0]
	fmt.Printf("epochs %d, train RMSE fell by half: %v, privacy: %s\n", len(res.History), last.TrainRMSE < first.TrainRMSE/2, res.Privacy.Mode)
	// Output: epochs 100, train RMSE fell by half: true, privacy: none
}
